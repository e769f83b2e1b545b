package postgres

import (
	"context"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/store/pgtest"
)

// base64Output is n bytes of base64 text of random bytes in 76-character
// lines, as `head -c N /dev/urandom | base64` prints.
func base64Output(rng *rand.Rand, n int) string {
	raw := make([]byte, n*3/4)
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	enc := base64.StdEncoding.EncodeToString(raw)
	var b strings.Builder
	b.Grow(len(enc) + len(enc)/76 + 1)
	for len(enc) > 76 {
		b.WriteString(enc[:76])
		b.WriteByte('\n')
		enc = enc[76:]
	}
	b.WriteString(enc)
	return b.String()
}

// BenchmarkStoreChurn is the SQLite store's BenchmarkStoreChurn on
// PostgreSQL (store/pgtest's server): each iteration stores a finished
// run whose shell step printed 1 MB of base64 text and prunes with
// retention keeping the newest 6 runs. It prints the runs table's whole
// size (its heap, TOAST and indexes, the search index among them) over
// the live rows' bytes (the values as stored, TOAST's compression
// included: pg_column_size), before and after a VACUUM of the table
// (what autovacuum does in its time; until then deleted rows' space is
// not reused).
//
//	go test ./store/postgres -run '^$' -bench BenchmarkStoreChurn -benchtime=200x
func BenchmarkStoreChurn(b *testing.B) {
	ctx := context.Background()
	d, err := Open(ctx, pgtest.NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	policy := store.PrunePolicy{Retention: engine.Retention{Runs: time.Second, KeepLast: 6}}
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
		if _, err := d.Prune(ctx, at.Add(time.Second), policy); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.StopTimer()
	type sizes struct{ total, toast, search, live, vector int64 }
	measure := func() sizes {
		var s sizes
		err := d.pool.QueryRow(ctx, `SELECT pg_total_relation_size('runs'),
			coalesce((SELECT pg_total_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'runs'::regclass AND reltoastrelid <> 0), 0),
			pg_relation_size('runs_search'),
			(SELECT coalesce(sum(pg_column_size(r.*)), 0) FROM runs r),
			(SELECT coalesce(sum(pg_column_size(search)), 0) FROM runs)`).Scan(&s.total, &s.toast, &s.search, &s.live, &s.vector)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	before := measure()
	if _, err := d.pool.Exec(ctx, `VACUUM runs`); err != nil {
		b.Fatal(err)
	}
	after := measure()
	var kept int
	var steps int64
	if err := d.pool.QueryRow(ctx, `SELECT count(*), coalesce(max(octet_length(steps)), 0) FROM runs`).Scan(&kept, &steps); err != nil {
		b.Fatal(err)
	}
	mb := func(n int64) float64 { return float64(n) / 1e6 }
	b.ReportMetric(float64(before.total)/float64(before.live), "table/live")
	b.ReportMetric(float64(after.total)/float64(after.live), "vacuumed/live")
	b.Logf("after %d runs of a shell step printing 1 MB, %d kept (steps %d bytes a run): the runs table takes %.2f MB (TOAST %.2f, "+
		"search GIN index %.2f) against %.2f MB of live rows as stored (their tsvectors %.2f MB): %.2f; after VACUUM %.2f MB (TOAST %.2f, GIN %.2f): %.2f",
		n, kept, steps, mb(before.total), mb(before.toast), mb(before.search), mb(before.live), mb(before.vector),
		float64(before.total)/float64(before.live), mb(after.total), mb(after.toast), mb(after.search), float64(after.total)/float64(after.live))
}
