package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/hookd/hookd/engine"
)

// autoVacuumIncremental is PRAGMA auto_vacuum's value for INCREMENTAL.
const autoVacuumIncremental = 2

// EnableIncrementalVacuum makes the database able to return the pages
// that deletes empty to the file system (auto_vacuum=INCREMENTAL), which
// Prune then does in small steps. A database made by this hookd is so
// from the start; one made before needs one VACUUM, which rewrites the
// file and holds the write lock while it does. It returns whether it ran
// that VACUUM. Only the lock holder should call it.
func (d *DB) EnableIncrementalVacuum(ctx context.Context) (bool, error) {
	mode, err := d.pragma(ctx, "auto_vacuum")
	if err != nil {
		return false, fmt.Errorf("enable incremental vacuum: %w", err)
	}
	if mode == autoVacuumIncremental {
		return false, nil
	}
	if _, err := d.w.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return false, fmt.Errorf("enable incremental vacuum: %w", err)
	}
	if _, err := d.w.ExecContext(ctx, "VACUUM"); err != nil {
		return false, fmt.Errorf("enable incremental vacuum: vacuum: %w", err)
	}
	return true, nil
}

// vacuum returns the database's free pages to the file system, vacuumStep
// pages per write, and returns how many bytes it freed. It does nothing
// unless auto_vacuum is INCREMENTAL.
func (d *DB) vacuum(ctx context.Context) (int64, error) {
	mode, err := d.pragma(ctx, "auto_vacuum")
	if err != nil || mode != autoVacuumIncremental {
		return 0, err
	}
	size, err := d.pragma(ctx, "page_size")
	if err != nil {
		return 0, err
	}
	var freed int64
	for {
		free, err := d.pragma(ctx, "freelist_count")
		if err != nil || free == 0 {
			return freed * size, err
		}
		// Each row of the pragma's result is a page freed: read them all.
		rows, err := d.w.QueryContext(ctx, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", vacuumStep))
		if err != nil {
			return freed * size, err
		}
		for rows.Next() {
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return freed * size, err
		}
		after, err := d.pragma(ctx, "freelist_count")
		if err != nil {
			return freed * size, err
		}
		if after >= free {
			return freed * size, nil // nothing more to free
		}
		freed += free - after
	}
}

func (d *DB) pragma(ctx context.Context, name string) (int64, error) {
	var v int64
	if err := d.w.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	return v, nil
}

// Size is how much room the database takes.
type Size = engine.StoreSize

// Size returns the database's size on disk.
func (d *DB) Size(ctx context.Context) (Size, error) {
	var s Size
	var pages, free, size int64
	err := d.r.QueryRowContext(ctx, `SELECT p.page_count, f.freelist_count, s.page_size
		FROM pragma_page_count p, pragma_freelist_count f, pragma_page_size s`).Scan(&pages, &free, &size)
	if err != nil {
		return s, fmt.Errorf("read database size: %w", err)
	}
	s.Bytes, s.FreeBytes = pages*size, free*size
	if fi, err := os.Stat(d.sidecar("-wal")); err == nil {
		s.WALBytes = fi.Size()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return s, fmt.Errorf("read database size: %w", err)
	}
	return s, nil
}
