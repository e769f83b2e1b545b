package postgres

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/jackc/pgx/v5"
)

const runCols = store.RunCols

// sqlRunCheckFailed is migration 12: the check step a run did not pass
// (engine.Run.CheckFailed), read with the hooks' last status (state.go).
const sqlRunCheckFailed = `ALTER TABLE runs ADD COLUMN IF NOT EXISTS check_failed TEXT NOT NULL DEFAULT '';`

// sqlRunTraceLinks is migration 20: the traces of the triggers coalesced
// into a pending run (engine.Run.TraceLinks), as JSON; NULL for none.
const sqlRunTraceLinks = `ALTER TABLE runs ADD COLUMN IF NOT EXISTS trace_links TEXT;`

const sqlInsertRun = `INSERT INTO runs (` + runCols + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)`

// sqlUpsertRun inserts a run as running, or starts the queued run of the
// same id (keeping its seq). A run already running is left as is apart
// from the fields given again, so a retried StartRun is harmless; a final
// run is not touched, and the statement then affects no row.
const sqlUpsertRun = sqlInsertRun + `
	ON CONFLICT (id) DO UPDATE SET
		"trigger"  = excluded."trigger",
		slot       = excluded.slot,
		status     = excluded.status,
		reason     = excluded.reason,
		event_type = excluded.event_type,
		event      = excluded.event,
		depth      = excluded.depth,
		queued_at  = coalesce(excluded.queued_at, runs.queued_at),
		started_at = excluded.started_at
	WHERE runs.status IN ('queued', 'running')`

// InsertRun records a run that has not started: queued, or final with its
// reason. A paused or disabled hook's skip record identical to the hook's
// latest record merges into it (r then takes that record's ID, QueuedAt
// and Repeats). A slot it has is claimed, unless another run holds it,
// and the hook's last slot advances to it.
func (d *DB) InsertRun(ctx context.Context, r *engine.Run) error {
	if r.Status == "" || r.Status == engine.StatusRunning {
		return fmt.Errorf("insert run %s: status %q: a run is inserted queued or final; use StartRun", r.ID, r.Status)
	}
	args, err := store.RunArgs(r, r.Status)
	if err != nil {
		return fmt.Errorf("insert run %s: %w", r.ID, err)
	}
	id, repeats, queued := r.ID, r.Repeats, r.QueuedAt
	err = d.tx(ctx, func(tx pgx.Tx) error {
		if err := insertOrCollapse(ctx, tx, r, args); err != nil {
			return err
		}
		if err := reached(ctx, tx, r.EventSeq, r.Hook, r.ID); err != nil {
			return err
		}
		return claimSlot(ctx, tx, r.Hook, r.Slot, r.ID)
	})
	if err != nil {
		r.ID, r.Repeats, r.QueuedAt = id, repeats, queued
		return fmt.Errorf("insert run %s: %w", r.ID, err)
	}
	return nil
}

// insertOrCollapse inserts r, or merges a collapsible r into the hook's
// latest record when that is the same refusal (see store.Collapsible).
func insertOrCollapse(ctx context.Context, tx pgx.Tx, r *engine.Run, args []any) error {
	if store.Collapsible(r) {
		out := args[21]
		var (
			seq     int64
			id      string
			queued  *int64
			repeats int
		)
		err := tx.QueryRow(ctx, `SELECT seq, id, queued_at, repeats FROM
			(SELECT * FROM runs WHERE hook = $1 ORDER BY seq DESC LIMIT 1) latest
			WHERE status = $2 AND reason = $3 AND "trigger" = $4 AND event_type = $5
				AND outcome IS NOT DISTINCT FROM $6::text`,
			r.Hook, string(r.Status), r.Reason, r.Trigger, r.EventType, out).Scan(&seq, &id, &queued, &repeats)
		switch {
		case err == nil:
			_, err = tx.Exec(ctx, `UPDATE runs SET repeats = repeats + 1, finished_at = $1,
				event = $2, slot = coalesce($3, slot) WHERE seq = $4`,
				timeArg(r.FinishedAt), store.RawArg(r.Event), timeArg(r.Slot), seq)
			if err != nil {
				return err
			}
			r.ID, r.QueuedAt, r.Repeats = id, nullTime(queued), repeats+1
			return nil
		case !errNoRows(err):
			return err
		}
	}
	_, err := tx.Exec(ctx, sqlInsertRun, args...)
	return err
}

// StartRun marks a run running, inserting it if it was not queued, and in
// the same transaction records the hook's last start and claims r.Slot
// when set. A slot another run holds fails with engine.ErrSlotTaken and
// changes nothing: the claim is an INSERT into slots, whose UNIQUE
// (hook, slot) makes a concurrent claimer on any node wait for the first
// one's transaction and then find the slot held.
func (d *DB) StartRun(ctx context.Context, r *engine.Run) error {
	return d.startRun(ctx, r, 0)
}

// StartRunDispatched is StartRun that also marks the event with this seq
// dispatched, in the same transaction.
func (d *DB) StartRunDispatched(ctx context.Context, r *engine.Run, seq int64) error {
	return d.startRun(ctx, r, seq)
}

// StartRunWithEvent stores ev, marked dispatched, and sets ev.Seq, and
// starts r as StartRun does, in one transaction that holds the events
// lock: both are stored or neither is. An ID stored before fails with
// engine.ErrDuplicateEvent and starts nothing.
func (d *DB) StartRunWithEvent(ctx context.Context, r *engine.Run, ev *engine.Event) error {
	defer d.obs.EventsStored()
	args, err := store.RunArgs(r, engine.StatusRunning)
	if err != nil {
		return fmt.Errorf("start run %s: %w", r.ID, err)
	}
	err = d.eventTx(ctx, func(tx pgx.Tx) error {
		if err := insertEvent(ctx, tx, ev, true); err != nil {
			return fmt.Errorf("store event %s: %w", ev.ID, err)
		}
		return startIn(ctx, tx, r, args, 0)
	})
	if err != nil {
		return fmt.Errorf("start run %s: %w", r.ID, err)
	}
	return nil
}

// startRun starts r and, when seq is not 0, marks that event dispatched.
func (d *DB) startRun(ctx context.Context, r *engine.Run, seq int64) error {
	args, err := store.RunArgs(r, engine.StatusRunning)
	if err != nil {
		return fmt.Errorf("start run %s: %w", r.ID, err)
	}
	if err := d.tx(ctx, func(tx pgx.Tx) error { return startIn(ctx, tx, r, args, seq) }); err != nil {
		return fmt.Errorf("start run %s: %w", r.ID, err)
	}
	return nil
}

// startIn is the write of a run's start, in tx: r with its row's args
// (runArgs), and the event with seq marked dispatched when seq is not 0.
func startIn(ctx context.Context, tx pgx.Tx, r *engine.Run, args []any, seq int64) error {
	slot := timeInt(r.Slot)
	if slot != 0 {
		if err := slotFree(ctx, tx, r.Hook, r.Slot, r.ID); err != nil {
			return err
		}
	}
	tag, err := tx.Exec(ctx, sqlUpsertRun, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		var st string
		if err := tx.QueryRow(ctx, `SELECT status FROM runs WHERE id = $1`, r.ID).Scan(&st); err != nil {
			return err
		}
		return fmt.Errorf("run is already %s", st)
	}
	if slot != 0 {
		tag, err := tx.Exec(ctx, `INSERT INTO slots (hook, slot, run_id) VALUES ($1, $2, $3)
			ON CONFLICT (hook, slot) DO NOTHING`, r.Hook, slot, r.ID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			// Claimed meanwhile, by this run (a retry) or another.
			if err := slotFree(ctx, tx, r.Hook, r.Slot, r.ID); err != nil {
				return err
			}
		}
	}
	// An event marked dispatched here needs no record of the hooks it
	// reached: the mark drops them.
	if r.EventSeq != seq {
		if err := reached(ctx, tx, r.EventSeq, r.Hook, r.ID); err != nil {
			return err
		}
	}
	if seq != 0 {
		if err := markIn(ctx, tx, seq); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, `INSERT INTO hook_state (hook, last_slot, last_start, last_run_id, last_status, last_run_slot)
		VALUES ($1, $2, $3, $4, $5, $2)
		ON CONFLICT (hook) DO UPDATE SET
			last_slot = greatest(hook_state.last_slot, excluded.last_slot),
			last_start = excluded.last_start,
			last_run_id = excluded.last_run_id,
			last_status = excluded.last_status,
			last_run_slot = excluded.last_run_slot`,
		r.Hook, slot, timeInt(r.StartedAt), r.ID, string(engine.StatusRunning))
	return err
}

// slotFree returns engine.ErrSlotTaken when a run other than id holds the
// slot of hook.
func slotFree(ctx context.Context, tx pgx.Tx, hook string, slot time.Time, id string) error {
	var owner string
	err := tx.QueryRow(ctx, `SELECT run_id FROM slots WHERE hook = $1 AND slot = $2`, hook, timeInt(slot)).Scan(&owner)
	switch {
	case err == nil && owner != id:
		return fmt.Errorf("slot %s of hook %s is held by run %s: %w",
			slot.UTC().Format(time.RFC3339Nano), hook, owner, engine.ErrSlotTaken)
	case err != nil && !errNoRows(err):
		return err
	}
	return nil
}

// claimSlot records that slot of hook went to run id (unless a run holds
// it already) and advances the hook's last slot to it. A zero slot does
// nothing.
func claimSlot(ctx context.Context, tx pgx.Tx, hook string, slot time.Time, id string) error {
	if slot.IsZero() {
		return nil
	}
	n := timeInt(slot)
	if _, err := tx.Exec(ctx, `INSERT INTO slots (hook, slot, run_id) VALUES ($1, $2, $3)
		ON CONFLICT (hook, slot) DO NOTHING`, hook, n, id); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO hook_state (hook, last_slot) VALUES ($1, $2)
		ON CONFLICT (hook) DO UPDATE SET last_slot = greatest(hook_state.last_slot, excluded.last_slot)`, hook, n)
	return err
}

// FinishRun stores a run's final status and results, and the hook's last
// status if this run is the hook's latest start. A run never stored is
// engine.ErrNotFound.
func (d *DB) FinishRun(ctx context.Context, r *engine.Run) error {
	return d.finishRun(ctx, r, "")
}

// finishRun is FinishRun; with node set, of a run node holds running
// only: the condition is part of the UPDATE, which PostgreSQL evaluates
// again on the row's latest version once a concurrent writer (an expiry
// of node's runs) commits, so a run is never both interrupted and
// finished. A run the condition does not select wraps engine.ErrNotFound.
func (d *DB) finishRun(ctx context.Context, r *engine.Run, node string) error {
	steps, err := store.StepsArg(r.Steps)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", r.ID, err)
	}
	out, err := store.RunOutcomeArg(r)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", r.ID, err)
	}
	pt, ct, cached := store.TokenArgs(r.Tokens)
	err = d.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET
			status = $1, reason = $2, event_type = $3, event = $4, steps = $5, prompt = $6,
			response = $7, tool_calls = $8, prompt_tokens = $9, completion_tokens = $10,
			cached_tokens = $11, error = $12, fingerprint = $13, finished_at = $14, outcome = $15,
			check_failed = $18, untold = untold OR $17 <> ''
			WHERE id = $16 AND ($17 = '' OR (node = $17 AND status = 'running'))`,
			string(r.Status), r.Reason, r.EventType, store.RawArg(r.Event), steps, r.Prompt,
			r.Response, store.RawArg(r.ToolCalls), pt, ct, cached, r.Error, r.Fingerprint,
			timeArg(r.FinishedAt), out, r.ID, node, r.CheckFailed)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 && node != "" {
			return fmt.Errorf("not running on node %s: %w", node, engine.ErrNotFound)
		}
		if tag.RowsAffected() == 0 {
			return engine.ErrNotFound
		}
		_, err = tx.Exec(ctx, `UPDATE hook_state SET last_status = $1 WHERE hook = $2 AND last_run_id = $3`,
			string(r.Status), r.Hook, r.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish run %s: %w", r.ID, err)
	}
	return nil
}

// NoteRun appends note to the notes of run id's record. A run that was
// never stored is engine.ErrNotFound.
func (d *DB) NoteRun(ctx context.Context, id, note string) error {
	err := d.tx(ctx, func(tx pgx.Tx) error {
		var col *string
		err := tx.QueryRow(ctx, `SELECT outcome FROM runs WHERE id = $1 FOR UPDATE`, id).Scan(&col)
		if errNoRows(err) {
			return engine.ErrNotFound
		}
		if err != nil {
			return err
		}
		prev := ""
		if col != nil {
			prev = *col
		}
		out, err := store.RunOutcomeWithNote(id, prev, note)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE runs SET outcome = $1 WHERE id = $2`, out, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("note run %s: %w", id, err)
	}
	return nil
}

// GetRun returns a run by id, or an error wrapping engine.ErrNotFound.
func (d *DB) GetRun(ctx context.Context, id string) (*engine.Run, error) {
	r, _, err := store.ScanRun(d.pool.QueryRow(ctx, `SELECT `+runCols+`, seq FROM runs WHERE id = $1`, id))
	if errNoRows(err) {
		return nil, fmt.Errorf("get run %s: %w", id, engine.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get run %s: %w", id, err)
	}
	return r, nil
}

// ListRuns returns the runs f selects, newest first. f.Before is a run
// id: only runs recorded before it are returned (an unknown id is
// engine.ErrNotFound). A zero f.Limit means 50.
func (d *DB) ListRuns(ctx context.Context, f engine.RunFilter) ([]*engine.Run, error) {
	var (
		where []string
		args  []any
	)
	arg := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.Hook != "" {
		arg("hook = ?", f.Hook)
	}
	if f.Status != "" {
		arg("status = ?", string(f.Status))
	}
	if f.Before != "" {
		var seq int64
		err := d.pool.QueryRow(ctx, `SELECT seq FROM runs WHERE id = $1`, f.Before).Scan(&seq)
		if errNoRows(err) {
			return nil, fmt.Errorf("list runs before %s: %w", f.Before, engine.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		arg("seq < ?", seq)
	}
	if !f.Since.IsZero() {
		arg("queued_at >= ?", timeInt(f.Since))
	}
	if !f.Until.IsZero() {
		arg("queued_at < ?", timeInt(f.Until))
	}
	limit := f.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	q := `SELECT ` + runCols + `, seq FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, limit)
	q += ` ORDER BY seq DESC LIMIT $` + strconv.Itoa(len(args))
	runs, err := d.queryRuns(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

// QueuedRuns returns the runs waiting in the queue, oldest first.
func (d *DB) QueuedRuns(ctx context.Context) ([]*engine.Run, error) {
	runs, err := d.queryRuns(ctx, `SELECT `+runCols+`, seq FROM runs WHERE status = $1 ORDER BY seq`,
		string(engine.StatusQueued))
	if err != nil {
		return nil, fmt.Errorf("list queued runs: %w", err)
	}
	return runs, nil
}

// UpdateQueued replaces the event, event type, trigger, reason and depth
// of a queued run; in the same transaction a merged slot becomes the
// run's, and the hook's last slot, and a merged pending event is recorded
// as having reached the run's hook (DispatchedTo). A run that is not
// queued is engine.ErrNotFound.
func (d *DB) UpdateQueued(ctx context.Context, r *engine.Run, merged engine.Merged) error {
	err := d.tx(ctx, func(tx pgx.Tx) error { return updateQueued(ctx, tx, r, merged) })
	if err != nil {
		return fmt.Errorf("update queued run %s: %w", r.ID, err)
	}
	return nil
}

// updateQueued is UpdateQueued in tx.
func updateQueued(ctx context.Context, tx pgx.Tx, r *engine.Run, merged engine.Merged) error {
	links, err := store.TraceLinksArg(r.TraceLinks)
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `UPDATE runs SET event = $1, event_type = $2, "trigger" = $3,
		reason = $4, depth = $5, trace_links = $6 WHERE id = $7 AND status = $8`,
		store.RawArg(r.Event), r.EventType, r.Trigger, r.Reason, r.Depth, links, r.ID, string(engine.StatusQueued))
	if err != nil {
		return err
	}
	if tag.RowsAffected() > 0 {
		if err := reached(ctx, tx, merged.EventSeq, r.Hook, r.ID); err != nil {
			return err
		}
		return claimSlot(ctx, tx, r.Hook, merged.Slot, r.ID)
	}
	var st string
	err = tx.QueryRow(ctx, `SELECT status FROM runs WHERE id = $1`, r.ID).Scan(&st)
	if errNoRows(err) {
		return engine.ErrNotFound
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("run is %s, not queued: %w", st, engine.ErrNotFound)
}

// RecoverInterrupted marks every run left running interrupted, finished
// at now, and returns them oldest first with their process groups, each
// owed its follow-up (Owed) until the engine stores it (Follow). Queued
// runs are left for the queue. Only the holder of the daemon lock
// should call it.
func (d *DB) RecoverInterrupted(ctx context.Context, now time.Time) ([]*engine.Run, error) {
	var runs []*engine.Run
	err := d.tx(ctx, func(tx pgx.Tx) error {
		procs, err := runningProcs(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `UPDATE runs SET status = $1, reason = $2, finished_at = $3, owed = true
			WHERE status = $4 RETURNING `+runCols+`, seq`,
			string(engine.StatusInterrupted), store.InterruptedReason, timeArg(now), string(engine.StatusRunning))
		if err != nil {
			return err
		}
		var seqs []int64
		runs, seqs, err = collectRuns(rows)
		if err != nil {
			return err
		}
		sortBySeq(runs, seqs) // RETURNING promises no order
		for _, r := range runs {
			r.Procs = procs[r.ID]
		}
		_, err = tx.Exec(ctx, `UPDATE hook_state SET last_status = $1 WHERE last_status = $2`,
			string(engine.StatusInterrupted), string(engine.StatusRunning))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("recover interrupted runs: %w", err)
	}
	return runs, nil
}

// LastFingerprint returns the context fingerprint of the hook's latest
// run that has one, or "".
func (d *DB) LastFingerprint(ctx context.Context, hook string) (string, error) {
	var fp string
	err := d.pool.QueryRow(ctx, `SELECT fingerprint FROM runs
		WHERE hook = $1 AND fingerprint <> '' ORDER BY seq DESC LIMIT 1`, hook).Scan(&fp)
	if err != nil && !errNoRows(err) {
		return "", fmt.Errorf("read last fingerprint of %s: %w", hook, err)
	}
	return fp, nil
}

func (d *DB) queryRuns(ctx context.Context, q string, args ...any) ([]*engine.Run, error) {
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	runs, _, err := collectRuns(rows)
	return runs, err
}

// collectRuns scans and closes rows of runCols then seq.
func collectRuns(rows pgx.Rows) ([]*engine.Run, []int64, error) {
	defer rows.Close()
	return store.CollectRuns(rows)
}

func sortBySeq(runs []*engine.Run, seqs []int64) {
	idx := make([]int, len(runs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return seqs[idx[a]] < seqs[idx[b]] })
	sorted := make([]*engine.Run, len(runs))
	for i, j := range idx {
		sorted[i] = runs[j]
	}
	copy(runs, sorted)
}
