package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hookd/hookd/engine"
)

// sqlHookStates reads hook_state. The last status is that of the run
// last_run_id names: a run's end updates only its row in runs, not
// hook_state (one page fewer in the commit of every run's end), so the
// status is read where it is kept. The column last_status holds the
// status written with the start ("running"), and serves only if that run
// is gone (prune keeps each hook's latest started run, so only a run
// deleted by hand is).
const sqlHookStates = `SELECT h.hook, h.paused, h.last_slot, h.last_start, h.last_run_id,
		coalesce(r.status, h.last_status), h.last_run_slot, coalesce(r.check_failed, ''), h.first_seen
	FROM hook_state h LEFT JOIN runs r ON r.id = h.last_run_id`

// sqlLastRunSlot is migration 16: the schedule slot the latest run of
// each hook started for (engine.HookState.LastRunSlot), written with
// every start, which the cooldown is judged from. The hooks' latest runs
// of before give theirs.
const sqlLastRunSlot = `ALTER TABLE hook_state ADD COLUMN last_run_slot INTEGER NOT NULL DEFAULT 0;
UPDATE hook_state SET last_run_slot = coalesce((SELECT r.slot FROM runs r WHERE r.id = hook_state.last_run_id), 0);`

// sqlFirstSeen is migration 17: when a scheduling hookd first loaded each
// hook with a schedule (engine.HookState.FirstSeen). A hook that never
// fired misses its slots from then on.
const sqlFirstSeen = `ALTER TABLE hook_state ADD COLUMN first_seen INTEGER NOT NULL DEFAULT 0;`

// HookStates returns the saved state of every hook that has any, by name.
func (d *DB) HookStates(ctx context.Context) (map[string]engine.HookState, error) {
	rows, err := d.r.QueryContext(ctx, sqlHookStates)
	if err != nil {
		return nil, fmt.Errorf("read hook states: %w", err)
	}
	defer rows.Close()
	states := make(map[string]engine.HookState)
	for rows.Next() {
		s, err := ScanHookState(rows)
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
// has none, in one transaction.
func (d *DB) RecordFirstSeen(ctx context.Context, hooks []string, at time.Time) error {
	if len(hooks) == 0 {
		return nil
	}
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, h := range hooks {
			if _, err := tx.ExecContext(ctx, `INSERT INTO hook_state (hook, first_seen) VALUES (?, ?)
				ON CONFLICT (hook) DO UPDATE SET first_seen = excluded.first_seen WHERE hook_state.first_seen = 0`,
				h, timeInt(at)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record first seen of %d hook(s): %w", len(hooks), err)
	}
	return nil
}

// SetPaused records whether a hook is paused.
func (d *DB) SetPaused(ctx context.Context, hook string, paused bool) error {
	_, err := d.w.ExecContext(ctx, `INSERT INTO hook_state (hook, paused) VALUES (?, ?)
		ON CONFLICT (hook) DO UPDATE SET paused = excluded.paused`, hook, paused)
	if err != nil {
		return fmt.Errorf("set paused of %s: %w", hook, err)
	}
	return nil
}
