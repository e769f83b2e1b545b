package store

import (
	"context"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// churnKeep is how many runs retention keeps in BenchmarkStoreChurn.
const churnKeep = 6

// base64Output is n bytes of base64 text of random bytes in 76-character
// lines, as `head -c N /dev/urandom | base64` prints: every run's output
// is new words to the index. It is made a line at a time into the one
// string it returns: the soak measures the store's memory, not garbage
// of its own.
func base64Output(rng *rand.Rand, n int) string {
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

// BenchmarkStoreChurn prints what the database file holds against the
// live data under churn: each iteration stores a finished run whose shell
// step printed 1 MB of base64 text (its output and stdout field), indexes it (as the background indexer
// does) and prunes with retention keeping the newest churnKeep runs (as
// the daemon's retention does). The figure is the file's size (after a
// checkpoint: what the WAL holds is the file's too, later) over the runs
// table's own bytes: its pages by dbstat when the driver has it (go test
// -tags sqlite_dbstat), otherwise the bytes of its rows' values, which
// is what its pages hold less their headers and slack.
//
//	go test ./store -run '^$' -bench BenchmarkStoreChurn -benchtime=200x
func BenchmarkStoreChurn(b *testing.B) {
	d, _ := openTest(b)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	policy := PrunePolicy{Retention: engine.Retention{Runs: time.Second, KeepLast: churnKeep}}
	n := 0
	for b.Loop() {
		at = at.Add(2 * time.Second)
		out := base64Output(rng, 1<<20)
		r := &engine.Run{ID: engine.NewID(), Hook: "big", Trigger: "schedule", Status: engine.StatusRunning, StartedAt: at, QueuedAt: at}
		if err := d.StartRun(ctx, r); err != nil {
			b.Fatal(err)
		}
		r.Status, r.FinishedAt, r.Response = engine.StatusCompleted, at.Add(time.Second), "The output is the backup's key dump; nothing failed."
		r.Steps = []*engine.StepResult{{Index: 0, Name: "dump", Type: "shell", Output: out, ExitCode: new(0),
			Fields: map[string]any{"stdout": out, "stderr": "", "command": "head -c 786432 /dev/urandom | base64"}}}
		if err := d.FinishRun(ctx, r); err != nil {
			b.Fatal(err)
		}
		if err := d.IndexQueued(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Prune(ctx, at.Add(time.Second), policy); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.StopTimer()
	if n <= churnKeep {
		b.Fatalf("%d runs: churn needs more than %d (-benchtime=200x)", n, churnKeep)
	}
	truncateWAL(b, d)
	size, err := d.Size(ctx)
	if err != nil {
		b.Fatal(err)
	}
	live, how := churnLiveBytes(b, d)
	var kept int
	if err := d.r.QueryRowContext(ctx, `SELECT count(*) FROM runs`).Scan(&kept); err != nil {
		b.Fatal(err)
	}
	index := ftsBytes(b, d)
	var steps int64
	if err := d.r.QueryRowContext(ctx, `SELECT max(length(CAST(steps AS BLOB))) FROM runs`).Scan(&steps); err != nil {
		b.Fatal(err)
	}
	ratio := float64(size.Bytes) / float64(live)
	b.ReportMetric(ratio, "file/live")
	b.ReportMetric(float64(size.Bytes)/1e6, "file-MB")
	b.ReportMetric(float64(index)/1e6, "index-MB")
	b.ReportMetric(float64(steps), "steps-bytes/run")
	b.Logf("after %d runs of a shell step printing 1 MB, %d kept: file %.2f MB, live %.2f MB (%s), search index %.2f MB: file/live %.2f (target <= 1.5); a run's steps take %d bytes",
		n, kept, float64(size.Bytes)/1e6, float64(live)/1e6, how, float64(index)/1e6, ratio, steps)
}

// churnLiveBytes is what the runs table holds: its pages (dbstat) when
// the driver has the dbstat table, else the bytes of its rows' values.
func churnLiveBytes(tb testing.TB, d *DB) (int64, string) {
	tb.Helper()
	ctx := context.Background()
	var pages int64
	if err := d.r.QueryRowContext(ctx, `SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = 'runs'`).Scan(&pages); err == nil {
		return pages, "the runs table's pages, by dbstat"
	}
	var bytes int64
	err := d.r.QueryRowContext(ctx, `SELECT coalesce(sum(
		length(CAST(id AS BLOB)) + length(CAST(hook AS BLOB)) + length(CAST("trigger" AS BLOB)) + length(CAST(status AS BLOB)) +
		length(CAST(reason AS BLOB)) + length(CAST(event_type AS BLOB)) + coalesce(length(CAST(event AS BLOB)), 0) +
		coalesce(length(CAST(steps AS BLOB)), 0) + length(CAST(prompt AS BLOB)) + length(CAST(response AS BLOB)) +
		coalesce(length(CAST(tool_calls AS BLOB)), 0) + length(CAST(error AS BLOB)) + length(CAST(fingerprint AS BLOB)) +
		coalesce(length(CAST(outcome AS BLOB)), 0) + coalesce(length(CAST(procs AS BLOB)), 0) + 8*12), 0) FROM runs`).Scan(&bytes)
	if err != nil {
		tb.Fatal(err)
	}
	return bytes, "the runs rows' values (no dbstat in this build)"
}
