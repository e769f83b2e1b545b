package postgres

import (
	"context"
	"fmt"
)

// RunIDsWithPrefix returns up to limit run ids that begin with prefix, in
// id order.
func (d *DB) RunIDsWithPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	rows, err := d.pool.Query(ctx, `SELECT id FROM runs WHERE id >= $1 AND id < $2 ORDER BY id LIMIT $3`,
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
