package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hookd/hookd/engine"
)

// sqlRunsByTime indexes runs by the time they were queued, for the time
// filters of ListRuns and the dashboard's timeline.
const sqlRunsByTime = `CREATE INDEX runs_queued_at ON runs (queued_at);`

const briefCols = BriefCols

// LatestBriefs returns the latest n runs of hook, newest first, with only
// what a chart needs (the runs_hook_seq index serves it).
func (d *DB) LatestBriefs(ctx context.Context, hook string, n int) ([]engine.RunBrief, error) {
	out, err := d.queryBriefs(ctx, `SELECT `+briefCols+` FROM runs WHERE hook = ?
		ORDER BY seq DESC LIMIT ?`, hook, n)
	if err != nil {
		return nil, fmt.Errorf("list latest runs of %s: %w", hook, err)
	}
	return out, nil
}

// BriefsSince returns up to limit runs queued at or after since, newest
// first, with only what a chart needs (the runs_queued_at index serves
// it).
func (d *DB) BriefsSince(ctx context.Context, since time.Time, limit int) ([]engine.RunBrief, error) {
	out, err := d.queryBriefs(ctx, `SELECT `+briefCols+` FROM runs WHERE queued_at >= ?
		ORDER BY queued_at DESC LIMIT ?`, timeInt(since), limit)
	if err != nil {
		return nil, fmt.Errorf("list runs since %s: %w", since.Format(time.RFC3339), err)
	}
	return out, nil
}

// timeBounds turns ListRuns' time filter into conditions. Runs are
// recorded in the order they are queued, so the bounds become a range of
// seq, found through the runs_queued_at index, and the listing still walks
// seq (newest first) and stops at its limit; the exact times are checked
// too (unary + keeps SQLite from choosing the time index for the walk).
func (d *DB) timeBounds(ctx context.Context, since, until time.Time) ([]string, []any, error) {
	var where []string
	var args []any
	if !since.IsZero() {
		lo, err := d.seqAt(ctx, `SELECT seq FROM runs WHERE queued_at >= ? ORDER BY queued_at LIMIT 1`, since)
		if err != nil {
			return nil, nil, err
		}
		if lo == 0 {
			// Nothing was queued since: select nothing.
			return []string{"0"}, nil, nil
		}
		where = append(where, "seq >= ?", "+queued_at >= ?")
		args = append(args, lo, timeInt(since))
	}
	if !until.IsZero() {
		hi, err := d.seqAt(ctx, `SELECT seq FROM runs WHERE queued_at < ? ORDER BY queued_at DESC LIMIT 1`, until)
		if err != nil {
			return nil, nil, err
		}
		if hi == 0 {
			return []string{"0"}, nil, nil
		}
		where = append(where, "seq <= ?", "+queued_at < ?")
		args = append(args, hi, timeInt(until))
	}
	return where, args, nil
}

// seqAt returns the seq a one-row query at t selects, or 0 for none.
func (d *DB) seqAt(ctx context.Context, q string, t time.Time) (int64, error) {
	var seq int64
	err := d.r.QueryRowContext(ctx, q, timeInt(t)).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

func (d *DB) queryBriefs(ctx context.Context, q string, args ...any) ([]engine.RunBrief, error) {
	rows, err := d.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return Collect(rows, ScanBrief)
}
