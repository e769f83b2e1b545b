package postgres

import (
	"context"
	"fmt"
	"time"
)

// StartsSince returns when hook's runs that started at or after since
// started, oldest first (rate: windows).
func (d *DB) StartsSince(ctx context.Context, hook string, since time.Time) ([]time.Time, error) {
	rows, err := d.pool.Query(ctx, `SELECT started_at FROM runs WHERE hook = $1 AND started_at >= $2 ORDER BY started_at`,
		hook, timeInt(since))
	if err != nil {
		return nil, fmt.Errorf("list starts of %s: %w", hook, err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var ns int64
		if err := rows.Scan(&ns); err != nil {
			return nil, fmt.Errorf("list starts of %s: %w", hook, err)
		}
		out = append(out, intTime(ns))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list starts of %s: %w", hook, err)
	}
	return out, nil
}
