package store

import (
	"context"
	"fmt"
)

// RunIDsWithPrefix returns up to limit run ids that begin with prefix, in
// id order (the UNIQUE index on id serves the range).
func (d *DB) RunIDsWithPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT id FROM runs WHERE id >= ? AND id < ? ORDER BY id LIMIT ?`,
		prefix, prefix+"\x7f", limit)
	if err != nil {
		return nil, fmt.Errorf("find runs by prefix %q: %w", prefix, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("find runs by prefix %q: %w", prefix, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find runs by prefix %q: %w", prefix, err)
	}
	return ids, nil
}
