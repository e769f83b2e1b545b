// Package churntest is the churn workload of the stores' benchmarks
// (issue 31): runs with 1 MB outputs stored and pruned by retention,
// against the store contract (engine.Store), so that the SQLite and the
// PostgreSQL store run the same churn; each store measures its own size
// (Churn.Probe). It imports only engine, so that a store's own tests can
// use it.
package churntest

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// Keep is how many runs the churn's retention keeps.
const Keep = 6

// OutputBytes is the size of each churn run's output: 1 MB of
// base64 text.
const OutputBytes = 1 << 20

// Output is n bytes of base64 text of random bytes in 76-character
// lines, as `head -c N /dev/urandom | base64` prints: every run's output
// is new words to a search index, and does not compress. It is made a
// line at a time into the one string it returns: a soak measures the
// store's memory, not garbage of its own.
func Output(rng *rand.Rand, n int) string {
	raw := n * 3 / 4
	var b strings.Builder
	b.Grow(n + n/76 + 1)
	var chunk [57]byte // a line's bytes: 76 characters
	var line [77]byte
	for raw > 0 {
		k := min(raw, len(chunk))
		for i := range k {
			chunk[i] = byte(rng.Uint32())
		}
		raw -= k
		enc := base64.StdEncoding.AppendEncode(line[:0], chunk[:k])
		if raw > 0 {
			enc = append(enc, '\n')
		}
		b.Write(enc)
	}
	return b.String()
}

// Sizes is what a store takes for its runs under churn, against
// what its live runs hold, as the store's probe measures them.
type Sizes struct {
	// Stored is what the store takes: SQLite's database file,
	// PostgreSQL's runs table with its TOAST and indexes.
	Stored int64
	// Live is the live runs' bytes: the runs table's pages (SQLite's
	// dbstat), the rows' values as stored (PostgreSQL's pg_column_size).
	Live int64
	// Index is the search index's part of Stored.
	Index int64
	// Runs is how many runs the store holds.
	Runs int
	// Detail is the store's own account (how Live was measured, TOAST,
	// dead rows, autovacuum), printed as it is.
	Detail string
}

// Ratio is Stored over Live: the target is at most 1.5.
func (s Sizes) Ratio() float64 {
	if s.Live == 0 {
		return 0
	}
	return float64(s.Stored) / float64(s.Live)
}

// String is the sizes as the benchmarks print them.
func (s Sizes) String() string {
	return fmt.Sprintf("%d runs kept: stored %.2f MB (search index %.2f MB) against %.2f MB live: %.2f (target <= 1.5); %s",
		s.Runs, float64(s.Stored)/1e6, float64(s.Index)/1e6, float64(s.Live)/1e6, s.Ratio(), s.Detail)
}

// Churn is the workload of the stores' churn benchmarks, the same for
// every store (the store contract, engine.Store): runs whose shell step
// printed OutputBytes of base64 text (its output and its stdout
// field), finished and pruned by retention keeping the newest Keep,
// as a daemon with large outputs and a short retention stores them.
// Only Finished and Probe are the store's own.
type Churn struct {
	Store engine.Store
	// Finished, when set, is called after each run is finished: what
	// the store does in the background after a run's write (SQLite's
	// search indexer).
	Finished func(ctx context.Context) error
	// Settle, when set, is called before the final measure: what makes
	// the store's size its own (SQLite folds its log into the file).
	Settle func(ctx context.Context) error
	// Probe measures the store.
	Probe func(ctx context.Context) (Sizes, error)
}

// Policy is the churn's retention: runs older than age go, beyond
// the newest Keep.
func Policy(age time.Duration) engine.PrunePolicy {
	return engine.PrunePolicy{Retention: engine.Retention{Runs: age, KeepLast: Keep}}
}

// StoreRun stores one run of the churn, started at at and finished a
// second later, whose shell step printed out.
func (c *Churn) StoreRun(ctx context.Context, at time.Time, out string) (*engine.Run, error) {
	r := &engine.Run{ID: engine.NewID(), Hook: "big", Trigger: "schedule", Status: engine.StatusRunning, StartedAt: at, QueuedAt: at}
	if err := c.Store.StartRun(ctx, r); err != nil {
		return nil, fmt.Errorf("start run: %w", err)
	}
	r.Status, r.FinishedAt, r.Response = engine.StatusCompleted, at.Add(time.Second), "The output is the backup's key dump; nothing failed."
	r.Steps = []*engine.StepResult{{Index: 0, Name: "dump", Type: "shell", Output: out, ExitCode: new(0),
		Fields: map[string]any{"stdout": out, "stderr": "", "command": "head -c 786432 /dev/urandom | base64"}}}
	if err := c.Store.FinishRun(ctx, r); err != nil {
		return nil, fmt.Errorf("finish run: %w", err)
	}
	if c.Finished != nil {
		if err := c.Finished(ctx); err != nil {
			return nil, fmt.Errorf("after a run finished: %w", err)
		}
	}
	return r, nil
}

// Measure settles the store (Settle) and measures it (Probe).
func (c *Churn) Measure(tb testing.TB) Sizes {
	tb.Helper()
	ctx := context.Background()
	if c.Settle != nil {
		if err := c.Settle(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	s, err := c.Probe(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// Loop runs the churn one run an iteration of b.Loop, each started 2 s
// after the one before on a clock of its own and followed by a prune,
// then measures the store, reports stored/live and prints the sizes. It
// returns them.
//
// Run it with -benchtime=200x: a figure after fewer runs than a few
// times Keep says little.
func (c *Churn) Loop(b *testing.B) Sizes {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	policy := Policy(time.Second)
	n := 0
	for b.Loop() {
		at = at.Add(2 * time.Second)
		if _, err := c.StoreRun(ctx, at, Output(rng, OutputBytes)); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Store.Prune(ctx, at.Add(time.Second), policy); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.StopTimer()
	if n <= Keep {
		b.Fatalf("%d runs: churn needs more than %d (-benchtime=200x)", n, Keep)
	}
	s := c.Measure(b)
	b.ReportMetric(s.Ratio(), "stored/live")
	b.ReportMetric(float64(s.Stored)/1e6, "stored-MB")
	b.ReportMetric(float64(s.Index)/1e6, "index-MB")
	b.Logf("after %d runs of a shell step printing 1 MB, pruned after each: %s", n, s)
	return s
}

// Soak says how BenchmarkStoreSoak's churn runs on the wall clock.
type Soak struct {
	// For is how long the runs are stored.
	For time.Duration
	// Writers store runs at PerSecond runs a second in all, each read
	// back after it finished.
	Writers, PerSecond int
	// PruneEvery is how often retention prunes.
	PruneEvery time.Duration
	// SampleEvery is how often Sample is called (the first at the start).
	SampleEvery time.Duration
	// Sample, when set, samples what the benchmark follows besides the
	// store's size (a process's memory); at is the time since the start.
	Sample func(at time.Duration)
	// ProbeEvery, when not 0, is how often the store is measured (Probe,
	// without Settle) and the sizes printed while the runs go on.
	ProbeEvery time.Duration
}

// SoakResult is what Churn.Soak did and measured.
type SoakResult struct {
	// Runs is how many runs were stored, in Took.
	Runs int
	Took time.Duration
	// Probes are the sizes measured while the runs went on (ProbeEvery).
	Probes []Sizes
	// End is the sizes at the end, after a last prune and Settle.
	End Sizes
}

// Soak runs the churn on the wall clock for s.For: s.Writers goroutines
// store runs at s.PerSecond in all, each read back as the dashboard and
// API read a run, while retention (Policy, keeping Keep)
// prunes every s.PruneEvery; the store is measured every s.ProbeEvery
// and at the end.
func (c *Churn) Soak(b *testing.B, s Soak) SoakResult {
	b.Helper()
	ctx := context.Background()
	policy := Policy(time.Nanosecond)
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var runs int
	for w := range s.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			tick := time.NewTicker(time.Second * time.Duration(s.Writers) / time.Duration(s.PerSecond))
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				r, err := c.StoreRun(ctx, time.Now(), Output(rng, OutputBytes))
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := c.Store.GetRun(ctx, r.ID); err != nil && err != engine.ErrNotFound {
					b.Error(err)
					return
				}
				mu.Lock()
				runs++
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(s.PruneEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := c.Store.Prune(ctx, time.Now(), policy); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	var res SoakResult
	if s.Sample != nil {
		s.Sample(0)
	}
	sample := time.NewTicker(s.SampleEvery)
	defer sample.Stop()
	var probe <-chan time.Time
	if s.ProbeEvery > 0 {
		t := time.NewTicker(s.ProbeEvery)
		defer t.Stop()
		probe = t.C
	}
	for end := time.After(s.For); ; {
		select {
		case <-sample.C:
			if s.Sample != nil {
				s.Sample(time.Since(start))
			}
			continue
		case <-probe:
			p, err := c.Probe(ctx)
			if err != nil {
				b.Error(err)
				continue
			}
			res.Probes = append(res.Probes, p)
			mu.Lock()
			n := runs
			mu.Unlock()
			b.Logf("%6s, %d runs: %s", time.Since(start).Round(time.Second), n, p)
			continue
		case <-end:
		}
		break
	}
	close(stop)
	wg.Wait()
	res.Runs, res.Took = runs, time.Since(start)
	if _, err := c.Store.Prune(ctx, time.Now(), policy); err != nil {
		b.Fatal(err)
	}
	res.End = c.Measure(b)
	b.ReportMetric(res.End.Ratio(), "stored/live")
	return res
}
