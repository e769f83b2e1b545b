package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hookd/hookd/engine"
)

// sqlWatchSnapshots adds the files a scan_on_start watch saw last
// (migration 3). watch_snapshots says a hook has a snapshot at all (an
// empty tree is a snapshot too); watch_files holds its files.
const sqlWatchSnapshots = `
CREATE TABLE watch_snapshots (
	hook     TEXT    PRIMARY KEY,
	saved_at INTEGER NOT NULL
);
CREATE TABLE watch_files (
	hook  TEXT    NOT NULL REFERENCES watch_snapshots (hook) ON DELETE CASCADE,
	path  TEXT    NOT NULL,
	size  INTEGER NOT NULL,
	mtime INTEGER NOT NULL,
	PRIMARY KEY (hook, path)
) WITHOUT ROWID;
`

// LoadSnapshot returns the files recorded for hook by path; ok is false
// when no snapshot was ever saved for it.
func (d *DB) LoadSnapshot(ctx context.Context, hook string) (map[string]engine.FileStamp, bool, error) {
	var n int
	if err := d.r.QueryRowContext(ctx, `SELECT count(*) FROM watch_snapshots WHERE hook = ?`, hook).Scan(&n); err != nil {
		return nil, false, fmt.Errorf("load snapshot of %s: %w", hook, err)
	}
	if n == 0 {
		return nil, false, nil
	}
	rows, err := d.r.QueryContext(ctx, `SELECT path, size, mtime FROM watch_files WHERE hook = ?`, hook)
	if err != nil {
		return nil, false, fmt.Errorf("load snapshot of %s: %w", hook, err)
	}
	defer rows.Close()
	files := map[string]engine.FileStamp{}
	for rows.Next() {
		var (
			path  string
			size  int64
			mtime int64
		)
		if err := rows.Scan(&path, &size, &mtime); err != nil {
			return nil, false, fmt.Errorf("load snapshot of %s: %w", hook, err)
		}
		files[path] = engine.FileStamp{Size: size, ModTime: intTime(mtime)}
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("load snapshot of %s: %w", hook, err)
	}
	return files, true, nil
}

// SaveSnapshot replaces hook's snapshot with files.
func (d *DB) SaveSnapshot(ctx context.Context, hook string, files map[string]engine.FileStamp) error {
	err := d.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM watch_files WHERE hook = ?`, hook); err != nil {
			return err
		}
		return writeSnapshot(ctx, tx, hook, files, nil, d.clock.Now())
	})
	if err != nil {
		return fmt.Errorf("save snapshot of %s: %w", hook, err)
	}
	return nil
}

// UpdateSnapshot records changed files and forgets deleted ones, in one
// transaction; it creates the snapshot if there is none.
func (d *DB) UpdateSnapshot(ctx context.Context, hook string, changed map[string]engine.FileStamp, deleted []string) error {
	err := d.tx(ctx, func(tx *sql.Tx) error {
		return writeSnapshot(ctx, tx, hook, changed, deleted, d.clock.Now())
	})
	if err != nil {
		return fmt.Errorf("update snapshot of %s: %w", hook, err)
	}
	return nil
}

func writeSnapshot(ctx context.Context, tx *sql.Tx, hook string, set map[string]engine.FileStamp, del []string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO watch_snapshots (hook, saved_at) VALUES (?, ?)
		ON CONFLICT (hook) DO UPDATE SET saved_at = excluded.saved_at`, hook, now.UnixNano()); err != nil {
		return err
	}
	if len(del) > 0 {
		st, err := tx.PrepareContext(ctx, `DELETE FROM watch_files WHERE hook = ? AND path = ?`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, p := range del {
			if _, err := st.ExecContext(ctx, hook, p); err != nil {
				return err
			}
		}
	}
	if len(set) > 0 {
		st, err := tx.PrepareContext(ctx, `INSERT INTO watch_files (hook, path, size, mtime) VALUES (?, ?, ?, ?)
			ON CONFLICT (hook, path) DO UPDATE SET size = excluded.size, mtime = excluded.mtime`)
		if err != nil {
			return err
		}
		defer st.Close()
		for p, f := range set {
			if _, err := st.ExecContext(ctx, hook, p, f.Size, timeInt(f.ModTime)); err != nil {
				return err
			}
		}
	}
	return nil
}

// DeleteSnapshot forgets hook's snapshot.
func (d *DB) DeleteSnapshot(ctx context.Context, hook string) error {
	err := d.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM watch_files WHERE hook = ?`, hook); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM watch_snapshots WHERE hook = ?`, hook)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete snapshot of %s: %w", hook, err)
	}
	return nil
}
