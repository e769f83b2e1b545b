package postgres

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hookd/hookd/store/churntest"
	"github.com/hookd/hookd/store/pgtest"
)

// BenchmarkStoreChurn is the SQLite store's BenchmarkStoreChurn on
// PostgreSQL (store/pgtest's server), the same churn (churntest.Churn):
// each iteration stores a finished run whose shell step printed 1 MB of
// base64 text and prunes with retention keeping the newest 6 runs. It
// prints the runs table's whole size (its heap, TOAST and indexes, the
// search index among them) over the live rows' bytes (the values as
// stored, TOAST's compression included: pg_column_size), and what
// autovacuum did.
//
//	go test ./store/postgres -run '^$' -bench BenchmarkStoreChurn -benchtime=200x
func BenchmarkStoreChurn(b *testing.B) {
	ctx := context.Background()
	d, err := Open(ctx, pgtest.NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	churn(d).Loop(b)
}

// BenchmarkStoreSoak is opt-in (HOOKD_SOAK=10m; not run otherwise, CI
// included): the SQLite store's soak on PostgreSQL, the same churn on the
// wall clock (churntest.Churn's Soak): for that long, 20 runs a second
// from 8 writers, each a shell step's 1 MB of base64 text, stored and
// read back, with retention keeping 6 runs pruning every 2 s. Every
// eighth of the time (at least 10 s) and at the end it prints the runs
// table's size (heap, TOAST, indexes; the search index's own) against
// the live rows' bytes, and the dead rows of the table and its TOAST
// with the vacuums autovacuum and the prunes ran: whether they keep up.
//
//	HOOKD_SOAK=10m go test ./store/postgres -run '^$' -bench BenchmarkStoreSoak -benchtime=1x -timeout 30m
func BenchmarkStoreSoak(b *testing.B) {
	soak, err := time.ParseDuration(os.Getenv("HOOKD_SOAK"))
	if err != nil || soak <= 0 {
		b.Skip("opt-in: set HOOKD_SOAK to how long to soak (10m)")
	}
	ctx := context.Background()
	url := pgtest.NewDatabase(b)
	for b.Loop() {
		d, err := Open(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		res := churn(d).Soak(b, churntest.Soak{For: soak, Writers: 8, PerSecond: 20, PruneEvery: 2 * time.Second,
			SampleEvery: 5 * time.Second, ProbeEvery: max(soak/8, 10*time.Second)})
		// The largest the table was in each half of the soak: a second
		// half larger than the first is growth the vacuums do not stop.
		var first, second int64
		for i, p := range res.Probes {
			if i < len(res.Probes)/2 {
				first = max(first, p.Stored)
			} else {
				second = max(second, p.Stored)
			}
		}
		b.ReportMetric(float64(second)/1e6, "late-peak-MB")
		b.Logf("%d runs of 1 MB in %s (%.1f/s); the runs table at most %.1f MB in the first half, %.1f MB in the second; at the end: %s",
			res.Runs, res.Took.Round(time.Second), float64(res.Runs)/res.Took.Seconds(), float64(first)/1e6, float64(second)/1e6, res.End)
		d.Close()
	}
}

// churn is the churn workload on d; its probe measures the runs table
// (heap, TOAST, indexes) against the live rows' bytes, and tells the dead
// rows and the vacuums.
func churn(d *DB) *churntest.Churn {
	return &churntest.Churn{Store: d, Probe: func(ctx context.Context) (churntest.Sizes, error) {
		var (
			s                                churntest.Sizes
			toast, vectors, steps            int64
			dead, toastDead, auto, toastAuto int64
			vacuums, toastVacuums            int64
			sinceAuto                        *float64
		)
		err := d.pool.QueryRow(ctx, `SELECT pg_total_relation_size('runs'),
			coalesce((SELECT pg_total_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'runs'::regclass AND reltoastrelid <> 0), 0),
			pg_relation_size('runs_search'),
			(SELECT coalesce(sum(pg_column_size(r.*)), 0) FROM runs r),
			(SELECT coalesce(sum(pg_column_size(search)), 0) FROM runs),
			(SELECT count(*) FROM runs), (SELECT coalesce(max(octet_length(steps)), 0) FROM runs),
			t.n_dead_tup, t.autovacuum_count, t.vacuum_count, extract(epoch FROM now() - t.last_autovacuum)::float8,
			coalesce(x.n_dead_tup, 0), coalesce(x.autovacuum_count, 0), coalesce(x.vacuum_count, 0)
			FROM pg_stat_user_tables t
			LEFT JOIN pg_stat_all_tables x ON x.relid = (SELECT reltoastrelid FROM pg_class WHERE oid = 'runs'::regclass)
			WHERE t.relid = 'runs'::regclass`).Scan(&s.Stored, &toast, &s.Index, &s.Live, &vectors, &s.Runs, &steps,
			&dead, &auto, &vacuums, &sinceAuto, &toastDead, &toastAuto, &toastVacuums)
		if err != nil {
			return s, fmt.Errorf("measure the runs table: %w", err)
		}
		last := "never"
		if sinceAuto != nil {
			last = fmt.Sprintf("%.0f s ago", *sinceAuto)
		}
		s.Detail = fmt.Sprintf("live: the rows' values as stored (pg_column_size), their tsvectors %.2f MB, a run's steps %d bytes; "+
			"TOAST %.2f MB; dead rows %d (TOAST %d chunks); autovacuum ran %d times on the table (last %s), %d on its TOAST; VACUUM (prunes) %d times (TOAST %d)",
			float64(vectors)/1e6, steps, float64(toast)/1e6, dead, toastDead, auto, last, toastAuto, vacuums, toastVacuums)
		return s, nil
	}}
}
