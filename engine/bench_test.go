package engine_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/triggers"
)

// The benchmarks below measure the figures the performance issue asks for
// on the real clock and a real SQLite file, and print them with
// b.ReportMetric; they assert nothing about timing. Run them one at a
// time, a few times, and read the medians, for example:
//
//	go test -run '^$' -bench 'BenchmarkFireLateness$' -benchtime 1x -count 3 ./engine/
//	go test -run '^$' -bench 'BenchmarkTimerBaseline$' -benchtime 3x -count 3 ./engine/
//	go test -run '^$' -bench 'BenchmarkEventDispatch$' -count 3 ./engine/
//	go test -run '^$' -bench 'BenchmarkRunsRecorded$' -benchtime 5000x -count 3 ./engine/
//	go test -run '^$' -bench 'BenchmarkIdleCPU$' -benchtime 1x -count 3 ./engine/
//
// BenchmarkIdleCPU takes 30s a run, so it runs only when the -bench
// pattern names it and never under -short.

const benchHooks = 10_000

// benchEngine is one engine on a fresh SQLite file, on the real clock.
type benchEngine struct {
	eng  *engine.Engine
	db   *store.DB
	logs *countHandler
}

// startBenchEngine starts an engine for hooks on a database in b's temp
// dir; it is stopped when b ends (or earlier, by stop).
func startBenchEngine(b *testing.B, hooks []*engine.Hook, tweak func(*engine.Config)) *benchEngine {
	b.Helper()
	db, err := store.Open(filepath.Join(b.TempDir(), "hookd.db"))
	if err != nil {
		b.Fatal(err)
	}
	logs := &countHandler{}
	cfg := engine.Config{
		Store:  db,
		Events: triggers.NewEventIndex(),
		Clock:  clock.System{},
		Logger: slog.New(logs),
		Tick:   time.Second,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	eng, err := engine.New(cfg, hooks)
	if err != nil {
		db.Close()
		b.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		db.Close()
		b.Fatal(err)
	}
	be := &benchEngine{eng: eng, db: db, logs: logs}
	b.Cleanup(be.stop)
	return be
}

// stop stops the engine and closes the store; it is safe twice.
func (be *benchEngine) stop() {
	be.eng.Stop()
	be.db.Close()
}

// report prints how many warnings and errors the engine logged, which
// say that a figure was taken while something went wrong: engine events
// dropped because the event log was full (events-dropped), a failed
// write.
func (be *benchEngine) report(b *testing.B) {
	n, dropped, first := be.logs.get()
	if dropped > 0 {
		b.ReportMetric(float64(dropped), "events-dropped")
	}
	if n > dropped {
		b.ReportMetric(float64(n-dropped), "warnings")
	}
	if n > 0 {
		b.Logf("the engine logged %d warnings or errors (%d engine events not stored); the first: %s", n, dropped, first)
	}
}

// countHandler counts the records of level warn and above.
type countHandler struct {
	mu      sync.Mutex
	n       int
	dropped int // "event log full; engine event not stored"
	first   string
}

func (h *countHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *countHandler) WithGroup(string) slog.Handler                { return h }

func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		var s strings.Builder
		s.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool { s.WriteString(" " + a.String()); return true })
		h.first = s.String()
	}
	h.n++
	if strings.HasPrefix(r.Message, "event log full") {
		h.dropped++
	}
	return nil
}

func (h *countHandler) get() (n, dropped int, first string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.dropped, h.first
}

// benchHook returns an enabled hook with no steps that skips the model.
func benchHook(name string) *engine.Hook {
	return &engine.Hook{Name: name, Enabled: true, Overlap: engine.OverlapSkip, SkipLLM: true,
		Source: engine.Source{File: name + ".yaml"}}
}

// withSchedule gives h a compiled periodic trigger.
func withSchedule(b *testing.B, h *engine.Hook, tr engine.Trigger) *engine.Hook {
	h.Trigger = tr
	return compile(h)
}

// quantile returns the q-quantile (0 < q <= 1) of sorted by the nearest
// rank.
func quantile[T any](sorted []T, q float64) T {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// BenchmarkFireLateness starts 10,000 hooks (every: 10s, jitter: 5s) at
// least 1.5s before their common first slot, so their jittered due times
// spread over the 5s after it, and measures each run's lateness: StartedAt, set by the
// loop when it starts the run, minus the jittered due time FireTimes
// computes. It reports p50, p99 and the maximum in milliseconds. The runs
// are recorded in SQLite as they go; MaxConcurrent is high enough that no
// run waits for a concurrency slot, so the figure is the loop's own. It
// also reports drain-ms: from the last due time until every run had ended
// and was recorded.
func BenchmarkFireLateness(b *testing.B) {
	const (
		interval = 10 * time.Second
		jitter   = 5 * time.Second
		lead     = 1500 * time.Millisecond // from the start to the slot at least
	)
	var late, drain []time.Duration
	for b.Loop() {
		hooks := make([]*engine.Hook, benchHooks)
		for i := range hooks {
			hooks[i] = withSchedule(b, benchHook(fmt.Sprintf("tick-%05d", i)),
				engine.Trigger{Kind: engine.TriggerEvery, Every: interval, Jitter: jitter})
		}
		// Start far enough before a slot that the startup is over when
		// the first hook is due.
		slot := hooks[0].Trigger.Schedule.Next(time.Now())
		if wait := time.Until(slot); wait < lead {
			time.Sleep(wait)
			slot = slot.Add(interval)
		}
		due := make(map[string]time.Time, len(hooks))
		last := slot
		for _, h := range hooks {
			t := engine.FireTimes(h, slot.Add(-1), 1)[0]
			due[h.Name] = t
			last = maxTime(last, t)
		}

		// Stop once every hook's first run has ended (and so is
		// recorded). Subscribers are called one at a time.
		ended := make(map[string]bool, len(hooks))
		var endedAll time.Time
		done := make(chan struct{})
		be := startBenchEngine(b, hooks, func(c *engine.Config) {
			c.MaxConcurrent = benchHooks
			c.QueueSize = 2 * benchHooks
		})
		be.eng.Subscribe(func(ev *engine.Event) {
			if ev.Type == engine.EventRunStarted || !strings.HasPrefix(ev.Type, "hook.run.") {
				return
			}
			hook, _ := ev.Data["hook"].(string)
			if _, ours := due[hook]; !ours || ended[hook] {
				return
			}
			ended[hook] = true
			if len(ended) == len(hooks) {
				endedAll = time.Now()
				close(done)
			}
		})
		select {
		case <-done:
		case <-time.After(time.Until(last) + time.Minute):
			b.Fatalf("a minute after the last was due, not every hook's run had ended")
		}
		be.eng.Stop()
		be.report(b)
		drain = append(drain, endedAll.Sub(last))
		runs, err := be.db.ListRuns(context.Background(), engine.RunFilter{Limit: 10 * benchHooks})
		if err != nil {
			b.Fatal(err)
		}
		be.db.Close()
		var started int
		for _, r := range runs {
			d, ok := due[r.Hook]
			if !ok || !r.Slot.Equal(slot) || r.StartedAt.IsZero() {
				continue
			}
			started++
			late = append(late, r.StartedAt.Sub(d))
		}
		if started != benchHooks {
			kinds := map[string]int{}
			for _, r := range runs {
				kinds[fmt.Sprintf("slot %s %s %s", r.Slot.Format(time.TimeOnly), r.Trigger, r.Status)]++
			}
			b.Fatalf("%d of %d hooks started a run for slot %s; the %d run records: %v",
				started, benchHooks, slot, len(runs), kinds)
		}
	}
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(quantile(late, 0.50)), "p50-ms")
	b.ReportMetric(ms(quantile(late, 0.99)), "p99-ms")
	b.ReportMetric(ms(late[len(late)-1]), "max-ms")
	slices.Sort(drain)
	b.ReportMetric(ms(quantile(drain, 0.5)), "drain-ms")
	b.Logf("lateness of %d runs: min %v p50 %v p90 %v p99 %v max %v", len(late),
		late[0], quantile(late, 0.5), quantile(late, 0.9), quantile(late, 0.99), late[len(late)-1])
}

// BenchmarkTimerBaseline is the floor under BenchmarkFireLateness: one
// goroutine and one Go timer, with no engine, fire 2,000 due times spread
// at random over one second (the density of 10,000 hooks over 5s) the way
// the loop does: sleep until the earliest, then take every one that has
// come. It reports the lateness p50 and p99 in ms. On Linux the Go runtime
// waits for timers in whole milliseconds (netpoll's epoll timeout), so
// this floor is about 1ms at p99.
func BenchmarkTimerBaseline(b *testing.B) {
	const n = 2000
	var late []time.Duration
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for b.Loop() {
		start := time.Now().Add(10 * time.Millisecond)
		due := make([]time.Time, n)
		for i := range due {
			due[i] = start.Add(time.Duration(rand.Int64N(int64(time.Second))))
		}
		slices.SortFunc(due, func(a, b time.Time) int { return a.Compare(b) })
		for i := 0; i < n; {
			now := time.Now()
			for ; i < n && !due[i].After(now); i++ {
				late = append(late, now.Sub(due[i]))
			}
			if i < n {
				timer.Reset(due[i].Sub(now))
				<-timer.C
			}
		}
	}
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(quantile(late, 0.50)), "p50-ms")
	b.ReportMetric(ms(quantile(late, 0.99)), "p99-ms")
	b.ReportMetric(ms(late[len(late)-1]), "max-ms")
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// dispatchHooks returns 10,000 event hooks over the 1,000 event types
// svcS.evE (S < 100, E < 10): seven literal hooks per type, and per
// service ten svcS.* (where env: prod) and ten svcS.** (where region: eu),
// and per evE a hundred *.evE (where env: prod).
func dispatchHooks() []*engine.Hook {
	hooks := make([]*engine.Hook, benchHooks)
	for i := range hooks {
		k, variant := i%1000, i/1000
		svc, ev := k/10, k%10
		tr := engine.Trigger{Kind: engine.TriggerEvent}
		switch variant {
		case 7:
			tr.Event, tr.Where = fmt.Sprintf("svc%d.*", svc), map[string]any{"env": "prod"}
		case 8:
			tr.Event, tr.Where = fmt.Sprintf("svc%d.**", svc), map[string]any{"region": "eu"}
		case 9:
			tr.Event, tr.Where = fmt.Sprintf("*.ev%d", ev), map[string]any{"env": "prod"}
		default:
			tr.Event = fmt.Sprintf("svc%d.ev%d", svc, ev)
		}
		h := benchHook(fmt.Sprintf("on-%05d", i))
		h.Trigger = tr
		hooks[i] = h
	}
	return hooks
}

// dispatchEvents returns events that match none of dispatchHooks, in
// three shapes: one segment too many (svcS.evE.detail walks the trie and
// fails the svcS.** filters), an unknown event of a known service (fails
// the svcS.* and svcS.** filters), and an unknown service.
func dispatchEvents(n int) []*engine.Event {
	evs := make([]*engine.Event, n)
	for i := range evs {
		svc, e := i%100, (i/100)%10
		var typ string
		switch i % 3 {
		case 0:
			typ = fmt.Sprintf("svc%d.ev%d.detail", svc, e)
		case 1:
			typ = fmt.Sprintf("svc%d.unknown%d", svc, e)
		default:
			typ = fmt.Sprintf("other%d.ev%d", svc, e)
		}
		evs[i] = &engine.Event{ID: fmt.Sprintf("ev-%d", i), Type: typ, Source: "bench",
			Data: map[string]any{"env": "dev", "region": "us", "service": fmt.Sprint(svc)}}
	}
	return evs
}

// BenchmarkEventDispatch dispatches events that match none of 10,000
// event hooks (1,000 event types, some wildcards and payload filters)
// through the loop with Dispatch, which matches in memory and returns once
// the loop decided. It reports events/s for b.N dispatches from one
// publisher, events/s from 8 concurrent publishers, and the latency of
// 20,000 single dispatches (publish to decision) as p50 and p99 in µs.
func BenchmarkEventDispatch(b *testing.B) {
	const (
		samples    = 20_000
		publishers = 8
		parallelN  = 200_000
	)
	hooks := dispatchHooks()
	evs := dispatchEvents(3000)

	// The events must match nothing, and a matching event must match:
	// check on an index of our own (the engine's belongs to its loop).
	idx := triggers.NewEventIndex()
	for _, h := range hooks {
		if err := idx.Add(h.Name, h.Trigger.Event, h.Trigger.Where); err != nil {
			b.Fatal(err)
		}
	}
	for _, ev := range evs {
		if m := idx.Match(nil, ev); len(m) != 0 {
			b.Fatalf("event %s matches %v", ev.Type, m)
		}
	}
	if m := idx.Match(nil, &engine.Event{Type: "svc3.ev4", Data: map[string]any{"env": "prod", "region": "eu"}}); len(m) != 7+10+10+100 {
		b.Fatalf("svc3.ev4 matches %d hooks, want %d", len(m), 7+10+10+100)
	}

	be := startBenchEngine(b, hooks, nil)
	ctx := context.Background()
	dispatch := func(ev *engine.Event) {
		runs, err := be.eng.Dispatch(ctx, ev)
		if err != nil || len(runs) != 0 {
			b.Fatalf("dispatch %s: %d runs, %v", ev.Type, len(runs), err)
		}
	}
	for _, ev := range evs { // warm up
		dispatch(ev)
	}

	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		dispatch(evs[i%len(evs)])
	}
	elapsed := time.Since(start)
	b.StopTimer()

	// Throughput with several publishers, whose messages the loop takes
	// in batches.
	var next atomic.Int64
	var wg sync.WaitGroup
	pstart := time.Now()
	for range publishers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > parallelN {
					return
				}
				if runs, err := be.eng.Dispatch(ctx, evs[int(i)%len(evs)]); err != nil || len(runs) != 0 {
					b.Errorf("dispatch: %d runs, %v", len(runs), err)
					return
				}
			}
		})
	}
	wg.Wait()
	pelapsed := time.Since(pstart)

	lat := make([]time.Duration, samples)
	for i := range lat {
		ev := evs[i%len(evs)]
		t0 := time.Now()
		dispatch(ev)
		lat[i] = time.Since(t0)
	}
	slices.Sort(lat)
	be.report(b)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(parallelN)/pelapsed.Seconds(), "events/s-8pub")
	b.ReportMetric(us(quantile(lat, 0.50)), "p50-µs")
	b.ReportMetric(us(quantile(lat, 0.99)), "p99-µs")
	b.Logf("dispatch latency of %d events: p50 %v p90 %v p99 %v max %v", samples,
		quantile(lat, 0.5), quantile(lat, 0.9), quantile(lat, 0.99), lat[len(lat)-1])
}

// BenchmarkRunsRecorded fires hooks with no steps and skip_llm: true
// through the loop (Fire) and reports how many runs per second reach a
// final status recorded in the store. 64 workers each fire their own hook
// and wait for its run to end before firing it again, so no fire is
// refused or coalesced; MaxConcurrent is 64.
func BenchmarkRunsRecorded(b *testing.B) {
	const workers = 64
	hooks := make([]*engine.Hook, workers)
	for i := range hooks {
		hooks[i] = benchHook(fmt.Sprintf("fire-%02d", i))
	}
	be := startBenchEngine(b, hooks, func(c *engine.Config) { c.MaxConcurrent = workers })
	ctx := context.Background()

	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, h := range hooks {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				run, err := be.eng.Fire(ctx, h.Name, engine.FireOptions{})
				if err != nil {
					b.Errorf("fire %s: %v", h.Name, err)
					return
				}
				final, err := be.eng.Wait(ctx, run.ID)
				if err != nil || final.Status != engine.StatusCompleted {
					b.Errorf("run %s: %v %+v", run.ID, err, final)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()

	// Every run is in the store with its final status.
	runs, err := be.db.ListRuns(ctx, engine.RunFilter{Status: engine.StatusCompleted, Limit: b.N + 1})
	if err != nil {
		b.Fatal(err)
	}
	if len(runs) != b.N {
		b.Fatalf("%d completed runs in the store, want %d", len(runs), b.N)
	}
	be.report(b)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
}

// BenchmarkIdleCPU starts 10,000 cron hooks whose next slots are 5 to 7
// hours away and, after a short settle, measures the process's CPU time
// (getrusage) over 30s of wall time. It reports the CPU used as a percent
// of one core, the loop's wakeups per second, counted as the Resets of
// its timer (one per loop iteration) through a wrapped clock.Wall (the
// default clock: on Linux the loop sleeps on a timerfd until the earliest
// due time), and the context switches per second of all the process's
// threads (the Go runtime's included). It runs only when the -bench
// pattern names it, and never under -short.
func BenchmarkIdleCPU(b *testing.B) {
	const (
		settle = 2 * time.Second
		window = 30 * time.Second
	)
	if testing.Short() {
		b.Skip("takes 30s; not under -short")
	}
	if !benchNamed("IdleCPU") {
		b.Skip("takes 30s; runs only when -bench names it (-bench BenchmarkIdleCPU)")
	}
	now := time.Now().UTC()
	hour := now.Add(6 * time.Hour).Hour()
	hooks := make([]*engine.Hook, benchHooks)
	for i := range hooks {
		hooks[i] = withSchedule(b, benchHook(fmt.Sprintf("idle-%05d", i)), engine.Trigger{
			Kind: engine.TriggerCron, Cron: fmt.Sprintf("%d %d * * *", i%60, hour), Timezone: "UTC",
		})
		if next := engine.FireTimes(hooks[i], now, 1)[0]; next.Sub(now) < time.Hour {
			b.Fatalf("hook %s is due at %s, within the hour", hooks[i].Name, next)
		}
	}
	clk := &countingClock{}
	be := startBenchEngine(b, hooks, func(c *engine.Config) { c.Clock = clk })
	time.Sleep(settle)

	b.ResetTimer()
	for b.Loop() {
		ru0, cs0, w0, n0 := rusageCPU(b), rusageSwitches(b), time.Now(), clk.resets.Load()
		time.Sleep(window)
		ru1, cs1, w1, n1 := rusageCPU(b), rusageSwitches(b), time.Now(), clk.resets.Load()
		wall := w1.Sub(w0)
		cpu := ru1 - ru0
		b.ReportMetric(0, "ns/op")
		b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%")
		b.ReportMetric(float64(n1-n0)/wall.Seconds(), "wakeups/s")
		b.ReportMetric(float64(cs1-cs0)/wall.Seconds(), "ctxsw/s")
		b.Logf("%v of CPU in %v of wall time; %d loop wakeups; %d context switches of the process's threads",
			cpu, wall.Round(time.Millisecond), n1-n0, cs1-cs0)
	}
	be.report(b)
}

// benchNamed reports whether the -bench pattern names the benchmark.
func benchNamed(name string) bool {
	f := flag.Lookup("test.bench")
	return f != nil && strings.Contains(f.Value.String(), name)
}

// rusageCPU returns the user and system CPU time of the process so far.
func rusageCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rusageSwitches returns the voluntary and involuntary context switches
// of the process's threads so far.
func rusageSwitches(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Nvcsw + ru.Nivcsw
}

// countingClock is the engine's default clock (with wall-clock alarms
// where the system has them) with timers that count their Resets. The
// loop resets its one timer once per iteration, so the count is the
// number of times it woke up.
type countingClock struct {
	clock.Wall
	resets atomic.Int64
}

func (c *countingClock) NewTimer(d time.Duration) clock.Timer {
	return &countingTimer{Timer: c.Wall.NewTimer(d), n: &c.resets}
}

type countingTimer struct {
	clock.Timer
	n *atomic.Int64
}

func (t *countingTimer) Reset(d time.Duration) {
	t.n.Add(1)
	t.Timer.Reset(d)
}
