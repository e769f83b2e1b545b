package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

const briefCols = store.BriefCols

// LatestBriefs returns the latest n runs of hook, newest first, with only
// what a chart needs.
func (d *DB) LatestBriefs(ctx context.Context, hook string, n int) ([]engine.RunBrief, error) {
	out, err := d.queryBriefs(ctx, `SELECT `+briefCols+` FROM runs WHERE hook = $1 ORDER BY seq DESC LIMIT $2`, hook, n)
	if err != nil {
		return nil, fmt.Errorf("list latest runs of %s: %w", hook, err)
	}
	return out, nil
}

// BriefsSince returns up to limit runs queued at or after since, newest
// first, with only what a chart needs.
func (d *DB) BriefsSince(ctx context.Context, since time.Time, limit int) ([]engine.RunBrief, error) {
	out, err := d.queryBriefs(ctx, `SELECT `+briefCols+` FROM runs WHERE queued_at >= $1
		ORDER BY queued_at DESC LIMIT $2`, timeInt(since), limit)
	if err != nil {
		return nil, fmt.Errorf("list runs since %s: %w", since.Format(time.RFC3339), err)
	}
	return out, nil
}

func (d *DB) queryBriefs(ctx context.Context, q string, args ...any) ([]engine.RunBrief, error) {
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.Collect(rows, store.ScanBrief)
}

// Bytes returns the size of the database on the server.
func (d *DB) Bytes(ctx context.Context) (int64, error) {
	var n int64
	if err := d.pool.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read database size: %w", err)
	}
	return n, nil
}
