package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/jackc/pgx/v5"
)

// sqlLastRunSlot is migration 11: the schedule slot the latest run of
// each hook started for (engine.HookState.LastRunSlot), written with
// every start, which the cooldown is judged from. The hooks' latest runs
// of before give theirs.
const sqlLastRunSlot = `ALTER TABLE hook_state ADD COLUMN IF NOT EXISTS last_run_slot BIGINT NOT NULL DEFAULT 0;
UPDATE hook_state SET last_run_slot = coalesce((SELECT r.slot FROM runs r WHERE r.id = hook_state.last_run_id), 0);`

// sqlFirstSeen is migration 12: when a scheduling hookd first loaded each
// hook with a schedule (engine.HookState.FirstSeen). A hook that never
// fired misses its slots from then on.
const sqlFirstSeen = `ALTER TABLE hook_state ADD COLUMN IF NOT EXISTS first_seen BIGINT NOT NULL DEFAULT 0;`

// HookStates returns the saved state of every hook that has any, by name.
func (d *DB) HookStates(ctx context.Context) (map[string]engine.HookState, error) {
	rows, err := d.pool.Query(ctx, `SELECT h.hook, h.paused, h.last_slot, h.last_start, h.last_run_id, h.last_status, h.last_run_slot,
		coalesce(r.check_failed, ''), h.first_seen FROM hook_state h LEFT JOIN runs r ON r.id = h.last_run_id`)
	if err != nil {
		return nil, fmt.Errorf("read hook states: %w", err)
	}
	defer rows.Close()
	states := make(map[string]engine.HookState)
	for rows.Next() {
		s, err := store.ScanHookState(rows)
		if err != nil {
			return nil, fmt.Errorf("read hook states: %w", err)
		}
		states[s.Hook] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read hook states: %w", err)
	}
	return states, nil
}

// RecordFirstSeen records at as the first-seen time of each of hooks that
// has none, in one statement.
func (d *DB) RecordFirstSeen(ctx context.Context, hooks []string, at time.Time) error {
	if len(hooks) == 0 {
		return nil
	}
	_, err := d.pool.Exec(ctx, `INSERT INTO hook_state (hook, first_seen) SELECT DISTINCT unnest($1::text[]), $2::bigint
		ON CONFLICT (hook) DO UPDATE SET first_seen = excluded.first_seen WHERE hook_state.first_seen = 0`,
		hooks, timeInt(at))
	if err != nil {
		return fmt.Errorf("record first seen of %d hook(s): %w", len(hooks), err)
	}
	return nil
}

// SetPaused records whether a hook is paused.
func (d *DB) SetPaused(ctx context.Context, hook string, paused bool) error {
	_, err := d.pool.Exec(ctx, `INSERT INTO hook_state (hook, paused) VALUES ($1, $2)
		ON CONFLICT (hook) DO UPDATE SET paused = excluded.paused`, hook, paused)
	if err != nil {
		return fmt.Errorf("set paused of %s: %w", hook, err)
	}
	return nil
}

// AddRunProc appends a process group to the record of run id. The daemon
// records groups in its process journal instead (engine.ProcJournal); the
// column stays, read by RecoverInterrupted after a crash of a hookd
// that wrote it, and this for an engine without a journal.
func (d *DB) AddRunProc(ctx context.Context, id string, g engine.ProcGroup) error {
	b, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("record process group of run %s: %w", id, err)
	}
	_, err = d.pool.Exec(ctx, `UPDATE runs SET procs = coalesce(procs, '[]'::jsonb) || jsonb_build_array($1::jsonb)
		WHERE id = $2`, string(b), id)
	if err != nil {
		return fmt.Errorf("record process group of run %s: %w", id, err)
	}
	return nil
}

// runningProcs returns, in tx, the process groups of the runs marked
// running, by run id.
func runningProcs(ctx context.Context, tx pgx.Tx) (map[string][]engine.ProcGroup, error) {
	rows, err := tx.Query(ctx, `SELECT id, procs::text FROM runs WHERE status = $1 AND procs IS NOT NULL`,
		string(engine.StatusRunning))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]engine.ProcGroup{}
	for rows.Next() {
		var id, procs string
		if err := rows.Scan(&id, &procs); err != nil {
			return nil, err
		}
		var gs []engine.ProcGroup
		if err := json.Unmarshal([]byte(procs), &gs); err != nil {
			return nil, fmt.Errorf("decode process groups of run %s: %w", id, err)
		}
		out[id] = gs
	}
	return out, rows.Err()
}

// LoadSnapshot returns the files recorded for hook by path; ok is false
// when no snapshot was ever saved for it.
func (d *DB) LoadSnapshot(ctx context.Context, hook string) (map[string]engine.FileStamp, bool, error) {
	var n int
	if err := d.pool.QueryRow(ctx, `SELECT count(*) FROM watch_snapshots WHERE hook = $1`, hook).Scan(&n); err != nil {
		return nil, false, fmt.Errorf("load snapshot of %s: %w", hook, err)
	}
	if n == 0 {
		return nil, false, nil
	}
	rows, err := d.pool.Query(ctx, `SELECT path, size, mtime FROM watch_files WHERE hook = $1`, hook)
	if err != nil {
		return nil, false, fmt.Errorf("load snapshot of %s: %w", hook, err)
	}
	defer rows.Close()
	files := map[string]engine.FileStamp{}
	for rows.Next() {
		var (
			path        string
			size, mtime int64
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
	err := d.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM watch_files WHERE hook = $1`, hook); err != nil {
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
	err := d.tx(ctx, func(tx pgx.Tx) error { return writeSnapshot(ctx, tx, hook, changed, deleted, d.clock.Now()) })
	if err != nil {
		return fmt.Errorf("update snapshot of %s: %w", hook, err)
	}
	return nil
}

func writeSnapshot(ctx context.Context, tx pgx.Tx, hook string, set map[string]engine.FileStamp, del []string, now time.Time) error {
	if _, err := tx.Exec(ctx, `INSERT INTO watch_snapshots (hook, saved_at) VALUES ($1, $2)
		ON CONFLICT (hook) DO UPDATE SET saved_at = excluded.saved_at`, hook, now.UnixNano()); err != nil {
		return err
	}
	if len(del) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM watch_files WHERE hook = $1 AND path = ANY($2)`, hook, del); err != nil {
			return err
		}
	}
	if len(set) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for p, f := range set {
		b.Queue(`INSERT INTO watch_files (hook, path, size, mtime) VALUES ($1, $2, $3, $4)
			ON CONFLICT (hook, path) DO UPDATE SET size = excluded.size, mtime = excluded.mtime`,
			hook, p, f.Size, timeInt(f.ModTime))
	}
	return tx.SendBatch(ctx, b).Close()
}

// DeleteSnapshot forgets hook's snapshot.
func (d *DB) DeleteSnapshot(ctx context.Context, hook string) error {
	err := d.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM watch_files WHERE hook = $1`, hook); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM watch_snapshots WHERE hook = $1`, hook)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete snapshot of %s: %w", hook, err)
	}
	return nil
}

// sqlRetryTrace is migration 21: the trace of a pending retry
// (engine.PendingRetry.TraceParent, or else its TraceLink), the caller's
// trace the failed run continued, as store.TraceArg writes it.
const sqlRetryTrace = `ALTER TABLE retries ADD COLUMN IF NOT EXISTS trace_parent TEXT;`

// AddRetry records a pending retry.
func (d *DB) AddRetry(ctx context.Context, r *engine.PendingRetry) error {
	_, err := d.pool.Exec(ctx, `INSERT INTO retries (`+store.RetryCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, store.RetryArgs(r)...)
	if err != nil {
		return fmt.Errorf("add retry of run %s: %w", r.RetryOf, err)
	}
	return nil
}

// PendingRetries returns the pending retries, earliest due first.
func (d *DB) PendingRetries(ctx context.Context) ([]*engine.PendingRetry, error) {
	rows, err := d.pool.Query(ctx, `SELECT `+store.RetryCols+` FROM retries ORDER BY due_at, run_id`)
	if err != nil {
		return nil, fmt.Errorf("list pending retries: %w", err)
	}
	defer rows.Close()
	out, err := store.Collect(rows, store.ScanRetry)
	if err != nil {
		return nil, fmt.Errorf("list pending retries: %w", err)
	}
	return out, nil
}

// DeleteRetry forgets a pending retry.
func (d *DB) DeleteRetry(ctx context.Context, runID string) error {
	if _, err := d.pool.Exec(ctx, `DELETE FROM retries WHERE run_id = $1`, runID); err != nil {
		return fmt.Errorf("delete retry %s: %w", runID, err)
	}
	return nil
}
