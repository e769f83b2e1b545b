package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/hookd/hookd/store/churntest"
)

// BenchmarkStoreChurn prints what the database file holds against the
// live data under churn (churntest.Churn: each iteration stores a
// finished run whose shell step printed 1 MB of base64 text, indexes it
// as the background indexer does, and prunes with retention keeping the
// newest 6 runs). The figure is the file's size (after a checkpoint:
// what the WAL holds is the file's too, later) over the runs table's own
// bytes: its pages by dbstat when the driver has it (go test -tags
// sqlite_dbstat), otherwise the bytes of its rows' values, which is what
// its pages hold less their headers and slack.
//
//	go test ./store -run '^$' -bench BenchmarkStoreChurn -benchtime=200x
func BenchmarkStoreChurn(b *testing.B) {
	d, _ := openTest(b)
	c := churn(b, d)
	c.Loop(b)
}

// churn is the churn workload on d: its search indexer runs after each
// run (as the daemon's does in the background), and its probe measures
// the file against the runs table.
func churn(tb testing.TB, d *DB) *churntest.Churn {
	return &churntest.Churn{
		Store:    d,
		Finished: d.IndexQueued,
		Settle: func(ctx context.Context) error {
			if err := d.IndexQueued(ctx); err != nil {
				return err
			}
			truncateWAL(tb, d)
			return nil
		},
		Probe: func(ctx context.Context) (churntest.Sizes, error) {
			var s churntest.Sizes
			size, err := d.Size(ctx)
			if err != nil {
				return s, err
			}
			s.Stored = size.Bytes + size.WALBytes
			live, how := churnLiveBytes(tb, d)
			s.Live = live
			s.Index = ftsBytes(tb, d)
			var steps int64
			if err := d.r.QueryRowContext(ctx, `SELECT count(*), coalesce(max(length(CAST(steps AS BLOB))), 0) FROM runs`).Scan(&s.Runs, &steps); err != nil {
				return s, err
			}
			s.Detail = fmt.Sprintf("live: %s; the file %.2f MB and its WAL %.2f MB; a run's steps take %d bytes",
				how, float64(size.Bytes)/1e6, float64(size.WALBytes)/1e6, steps)
			return s, nil
		},
	}
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
	return bytes, "the runs table's rows' values (no dbstat in this build)"
}
