package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
)

// InterruptedReason is the reason RecoverInterrupted gives the runs it
// marks interrupted.
const InterruptedReason = "hookd stopped while the run was in flight"

// sqlRunProject adds the run's project label: the project_id of its hook
// (agent-queue's key), "" when the hook has none.
const sqlRunProject = `ALTER TABLE runs ADD COLUMN project TEXT NOT NULL DEFAULT '';`

// sqlRunHookVersion adds the version of the hook that triggered the run
// (engine.Run.HookVersion), as PostgreSQL keeps it (migration 15).
const sqlRunHookVersion = `ALTER TABLE runs ADD COLUMN hook_version TEXT NOT NULL DEFAULT '';`

// sqlRunCheckFailed is migration 17: the check step a run did not pass
// (engine.Run.CheckFailed), a column so that the hooks' last status
// (hookstate.go) reads it with the status.
const sqlRunCheckFailed = `ALTER TABLE runs ADD COLUMN check_failed TEXT NOT NULL DEFAULT '';`

// sqlRunTraceLinks is migration 25: the traces of the triggers coalesced
// into a pending run (engine.Run.TraceLinks), as JSON; NULL for none.
const sqlRunTraceLinks = `ALTER TABLE runs ADD COLUMN trace_links TEXT;`

// defaultLimit is the number of rows a list returns when no limit is given.
const defaultLimit = 50

const runCols = RunCols

const sqlInsertRun = `INSERT INTO runs (` + runCols + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// sqlUpsertRun inserts a run as running, or starts the queued run of the
// same id (keeping its seq, hence its place in the history). A run already
// running is left as is apart from the fields given again, so that a
// retried StartRun is harmless; a final run is not touched, and the
// statement then affects no row.
const sqlUpsertRun = sqlInsertRun + `
	ON CONFLICT (id) DO UPDATE SET
		"trigger"   = excluded."trigger",
		slot        = excluded.slot,
		status      = excluded.status,
		reason      = excluded.reason,
		event_type  = excluded.event_type,
		event       = excluded.event,
		depth       = excluded.depth,
		queued_at   = coalesce(excluded.queued_at, runs.queued_at),
		started_at  = excluded.started_at
	WHERE runs.status IN ('queued', 'running')`

const sqlFinishRun = `UPDATE runs SET
	status = ?, reason = ?, event_type = ?, event = ?, steps = ?, prompt = ?,
	response = ?, tool_calls = ?, prompt_tokens = ?, completion_tokens = ?,
	cached_tokens = ?, error = ?, fingerprint = ?, finished_at = ?, outcome = ?, check_failed = ?
	WHERE id = ?`

// InsertRun records a run that has not started: queued, or final (skipped,
// dropped, cancelled) with its reason. A skip record of a paused or
// disabled hook identical to the hook's latest record is merged into it
// (see insertOrCollapse): r then takes that record's ID, QueuedAt and
// Repeats. When r.Slot is set, the slot is
// claimed (unless another run holds it) and the hook's last slot advances
// to it, so that a skipped slot counts as consumed across a restart.
func (d *DB) InsertRun(ctx context.Context, r *engine.Run) error {
	if r.Status == "" || r.Status == engine.StatusRunning {
		return fmt.Errorf("insert run %s: status %q: a run is inserted queued or final; use StartRun", r.ID, r.Status)
	}
	args, err := RunArgs(r, r.Status)
	if err != nil {
		return fmt.Errorf("insert run %s: %w", r.ID, err)
	}
	id, repeats, queued := r.ID, r.Repeats, r.QueuedAt
	err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := d.insertOrCollapse(ctx, tx, r, args); err != nil { // collapse.go
			return err
		}
		if err := d.reached(ctx, tx, r.EventSeq, r.Hook, r.ID); err != nil {
			return err
		}
		return d.claimSlot(ctx, tx, r.Hook, r.Slot, r.ID)
	})
	if err != nil {
		r.ID, r.Repeats, r.QueuedAt = id, repeats, queued
		return fmt.Errorf("insert run %s: %w", r.ID, err)
	}
	d.afterRunWrite(r)
	return nil
}

// StartRun marks a run running, inserting it if it was not queued, and in
// the same transaction records the hook's last start and, when r.Slot is
// set, claims the slot. A slot held by another run fails with
// engine.ErrSlotTaken and changes nothing. Starting a run that is already
// final is an error.
func (d *DB) StartRun(ctx context.Context, r *engine.Run) error {
	return d.startRun(ctx, r, 0)
}

// StartRunDispatched is StartRun that also marks the event with this seq
// dispatched, in the same transaction.
func (d *DB) StartRunDispatched(ctx context.Context, r *engine.Run, seq int64) error {
	return d.startRun(ctx, r, seq)
}

// StartRunWithEvent stores ev, marked dispatched, and sets ev.Seq, and
// starts r as StartRun does, in one transaction: both are stored or
// neither is. An ID stored before fails with
// engine.ErrDuplicateEvent and starts nothing.
func (d *DB) StartRunWithEvent(ctx context.Context, r *engine.Run, ev *engine.Event) error {
	defer d.obs.EventsStored()
	args, err := RunArgs(r, engine.StatusRunning)
	if err != nil {
		return fmt.Errorf("start run %s: %w", r.ID, err)
	}
	row, err := newEventRow(ev, true)
	if err != nil {
		return fmt.Errorf("start run %s: store event %s: %w", r.ID, ev.ID, err)
	}
	err = d.writeFirst(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := d.insertEventRow(ctx, tx, row); err != nil {
			return fmt.Errorf("store event %s: %w", ev.ID, err)
		}
		return d.startIn(ctx, tx, r, args, 0)
	})
	if err != nil {
		return fmt.Errorf("start run %s: %w", r.ID, err)
	}
	return nil
}

// startRun starts r and, when seq is not 0, marks that event dispatched.
func (d *DB) startRun(ctx context.Context, r *engine.Run, seq int64) error {
	args, err := RunArgs(r, engine.StatusRunning)
	if err != nil {
		return fmt.Errorf("start run %s: %w", r.ID, err)
	}
	err = d.writeFirst(ctx, func(ctx context.Context, tx *sql.Tx) error { return d.startIn(ctx, tx, r, args, seq) })
	if err != nil {
		return fmt.Errorf("start run %s: %w", r.ID, err)
	}
	return nil
}

// startIn is the write of a run's start, in tx: r with its row's args
// (runArgs), and the event with seq marked dispatched when seq is not 0.
func (d *DB) startIn(ctx context.Context, tx *sql.Tx, r *engine.Run, args []any, seq int64) error {
	slot := timeInt(r.Slot)
	if slot != 0 {
		var owner string
		err := tx.StmtContext(ctx, d.stmtSlotOwner).QueryRowContext(ctx, r.Hook, slot).Scan(&owner)
		switch {
		case err == nil && owner != r.ID:
			return fmt.Errorf("slot %s of hook %s is held by run %s: %w",
				r.Slot.UTC().Format(time.RFC3339Nano), r.Hook, owner, engine.ErrSlotTaken)
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	res, err := tx.StmtContext(ctx, d.stmtUpsertRun).ExecContext(ctx, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		var st string
		if err := tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, r.ID).Scan(&st); err != nil {
			return err
		}
		return fmt.Errorf("run is already %s", st)
	}
	if slot != 0 {
		if _, err := tx.StmtContext(ctx, d.stmtClaimSlot).ExecContext(ctx, r.Hook, slot, r.ID); err != nil {
			return err
		}
	}
	// An event marked dispatched here needs no record of the hooks it
	// reached: the mark drops them.
	if r.EventSeq != seq {
		if err := d.reached(ctx, tx, r.EventSeq, r.Hook, r.ID); err != nil {
			return err
		}
	}
	if seq != 0 {
		if err := d.markIn(ctx, tx, seq); err != nil {
			return err
		}
	}
	_, err = tx.StmtContext(ctx, d.stmtStartState).ExecContext(ctx,
		r.Hook, slot, timeInt(r.StartedAt), r.ID, string(engine.StatusRunning))
	return err
}

// FinishRun stores a run's final status and results (and its event, which
// coalescing may have changed). The hook's last status follows when this
// run is the hook's latest start: HookStates reads it from the run
// (sqlHookStates), so the end writes nothing in hook_state. A run that was
// never stored is engine.ErrNotFound.
func (d *DB) FinishRun(ctx context.Context, r *engine.Run) error {
	steps, err := StepsArg(r.Steps)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", r.ID, err)
	}
	out, err := outcomeArg(r)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", r.ID, err)
	}
	pt, ct, cached := TokenArgs(r.Tokens)
	err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, d.stmtFinishRun).ExecContext(ctx,
			string(r.Status), r.Reason, r.EventType, RawArg(r.Event), steps, r.Prompt,
			r.Response, RawArg(r.ToolCalls), pt, ct, cached, r.Error, r.Fingerprint,
			timeArg(r.FinishedAt), out, r.CheckFailed, r.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return engine.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("finish run %s: %w", r.ID, err)
	}
	d.pokeIndexer() // the run is queued for the search index
	d.afterRunWrite(r)
	return nil
}

// NoteRun appends note to the notes of run id's record: what a person
// should know that came after the run's end (a notification dropped). A
// run that was never stored is engine.ErrNotFound.
func (d *DB) NoteRun(ctx context.Context, id, note string) error {
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var col sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT outcome FROM runs WHERE id = ?`, id).Scan(&col)
		if errors.Is(err, sql.ErrNoRows) {
			return engine.ErrNotFound
		}
		if err != nil {
			return err
		}
		out, err := appendNote(id, col.String, note)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET outcome = ? WHERE id = ?`, out, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("note run %s: %w", id, err)
	}
	return nil
}

// GetRun returns a run by id, or an error wrapping engine.ErrNotFound.
func (d *DB) GetRun(ctx context.Context, id string) (*engine.Run, error) {
	r, _, err := ScanRun(d.stmtGetRun.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get run %s: %w", id, engine.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get run %s: %w", id, err)
	}
	return r, nil
}

// ListRuns returns the runs f selects, newest first. f.Before is a run id:
// only runs recorded before it are returned (an unknown id is
// engine.ErrNotFound). A zero f.Limit means 50.
func (d *DB) ListRuns(ctx context.Context, f engine.RunFilter) ([]*engine.Run, error) {
	var (
		where []string
		args  []any
	)
	if f.Hook != "" {
		where = append(where, "hook = ?")
		args = append(args, f.Hook)
	}
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if f.Before != "" {
		var seq int64
		err := d.r.QueryRowContext(ctx, `SELECT seq FROM runs WHERE id = ?`, f.Before).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("list runs before %s: %w", f.Before, engine.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		where = append(where, "seq < ?")
		args = append(args, seq)
	}
	if !f.Since.IsZero() || !f.Until.IsZero() {
		w, a, err := d.timeBounds(ctx, f.Since, f.Until)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		where, args = append(where, w...), append(args, a...)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	q := `SELECT ` + runCols + `, seq FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, limit)
	runs, err := d.queryRuns(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

// QueuedRuns returns the runs waiting in the queue, oldest first.
func (d *DB) QueuedRuns(ctx context.Context) ([]*engine.Run, error) {
	runs, err := d.queryRuns(ctx,
		`SELECT `+runCols+`, seq FROM runs WHERE status = ? ORDER BY seq`, string(engine.StatusQueued))
	if err != nil {
		return nil, fmt.Errorf("list queued runs: %w", err)
	}
	return runs, nil
}

// UpdateQueued replaces the event, event type, trigger, reason, depth and
// trace links of a queued run (when a later trigger coalesces into it). What merged names
// was merged into the run, and is recorded in the same transaction: a
// slot as the run's, the hook's last slot advancing to it, so a restart
// never fires it again; a pending event as having reached the run's hook
// (DispatchedTo). A run that is not queued is engine.ErrNotFound.
func (d *DB) UpdateQueued(ctx context.Context, r *engine.Run, merged engine.Merged) error {
	links, err := TraceLinksArg(r.TraceLinks)
	if err != nil {
		return fmt.Errorf("update queued run %s: %w", r.ID, err)
	}
	err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET event = ?, event_type = ?, "trigger" = ?,
			reason = ?, depth = ?, trace_links = ? WHERE id = ? AND status = ?`,
			RawArg(r.Event), r.EventType, r.Trigger, r.Reason, r.Depth, links, r.ID, string(engine.StatusQueued))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n > 0 {
			if err := d.reached(ctx, tx, merged.EventSeq, r.Hook, r.ID); err != nil {
				return err
			}
			return d.claimSlot(ctx, tx, r.Hook, merged.Slot, r.ID)
		}
		var st string
		err = tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, r.ID).Scan(&st)
		if errors.Is(err, sql.ErrNoRows) {
			return engine.ErrNotFound
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("run is %s, not queued: %w", st, engine.ErrNotFound)
	})
	if err != nil {
		return fmt.Errorf("update queued run %s: %w", r.ID, err)
	}
	return nil
}

// claimSlot records, in tx, that slot of hook went to run id (unless a run
// holds it already) and advances the hook's last slot to it. A zero slot
// does nothing.
func (d *DB) claimSlot(ctx context.Context, tx *sql.Tx, hook string, slot time.Time, id string) error {
	if slot.IsZero() {
		return nil
	}
	n := timeInt(slot)
	if _, err := tx.StmtContext(ctx, d.stmtClaimSlot).ExecContext(ctx, hook, n, id); err != nil {
		return err
	}
	_, err := tx.StmtContext(ctx, d.stmtBumpSlot).ExecContext(ctx, hook, n)
	return err
}

// RecoverInterrupted marks every run left running (by a hookd that died)
// interrupted, finished at now, and returns them oldest first, each with
// the process groups its steps started (Run.Procs), each owed its
// follow-up (Owed) until the engine stores it (Follow). Queued runs
// are left for the queue. Only the holder of Lock should call it.
func (d *DB) RecoverInterrupted(ctx context.Context, now time.Time) ([]*engine.Run, error) {
	var runs []*engine.Run
	err := d.tx(ctx, func(tx *sql.Tx) error {
		procs, err := runningProcs(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `UPDATE runs SET status = ?, reason = ?, finished_at = ?, owed = 1
			WHERE status = ? RETURNING `+runCols+`, seq`,
			string(engine.StatusInterrupted), InterruptedReason, timeArg(now), string(engine.StatusRunning))
		if err != nil {
			return err
		}
		defer rows.Close()
		var seqs []int64
		runs, seqs, err = CollectRuns(rows)
		if err != nil {
			return err
		}
		sortBySeq(runs, seqs) // RETURNING promises no order
		for _, r := range runs {
			r.Procs = procs[r.ID]
		}
		// hook_state is not written: the hooks' last statuses are read
		// from their runs (sqlHookStates), which are now interrupted.
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("recover interrupted runs: %w", err)
	}
	d.pokeIndexer() // the interrupted runs, and any left queued by a crash
	return runs, nil
}

// LastFingerprint returns the context fingerprint of the hook's latest run
// that has one, or "" if none has.
func (d *DB) LastFingerprint(ctx context.Context, hook string) (string, error) {
	var fp string
	err := d.r.QueryRowContext(ctx, `SELECT fingerprint FROM runs
		WHERE hook = ? AND fingerprint <> '' ORDER BY seq DESC LIMIT 1`, hook).Scan(&fp)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read last fingerprint of %s: %w", hook, err)
	}
	return fp, nil
}

// queryRuns runs a read query whose columns are runCols then seq.
func (d *DB) queryRuns(ctx context.Context, q string, args ...any) ([]*engine.Run, error) {
	rows, err := d.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	runs, _, err := CollectRuns(rows)
	return runs, err
}

// sortBySeq orders runs by their seqs, ascending.
func sortBySeq(runs []*engine.Run, seqs []int64) {
	sort.Sort(bySeq{runs, seqs})
}

type bySeq struct {
	runs []*engine.Run
	seqs []int64
}

func (b bySeq) Len() int           { return len(b.runs) }
func (b bySeq) Less(i, j int) bool { return b.seqs[i] < b.seqs[j] }
func (b bySeq) Swap(i, j int) {
	b.runs[i], b.runs[j] = b.runs[j], b.runs[i]
	b.seqs[i], b.seqs[j] = b.seqs[j], b.seqs[i]
}
