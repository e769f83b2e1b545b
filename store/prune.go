package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
)

// sqlRetention adds what retention needs (migration 5): the count of a
// collapsed skip record (collapse.go).
const sqlRetention = `ALTER TABLE runs ADD COLUMN repeats INTEGER NOT NULL DEFAULT 1;`

// DefaultPruneBatch is how many rows Prune deletes per transaction when
// the policy does not say.
const DefaultPruneBatch = 500

// scanChunk is how many rows Prune reads at a time to choose what to
// delete.
const scanChunk = 2000

// vacuumStep is how many free pages one incremental_vacuum frees.
const vacuumStep = 200

// PrunePolicy says what Prune deletes (Batch 0: DefaultPruneBatch).
type PrunePolicy = engine.PrunePolicy

// PruneStats says what Prune deleted (or, on a dry run, would delete).
type PruneStats = engine.PruneStats

// Statuses by how retention treats them.
var (
	retainedRuns = []engine.Status{engine.StatusCompleted, engine.StatusFailed, engine.StatusCancelled, engine.StatusInterrupted}
	skipRecords  = []engine.Status{engine.StatusSkipped, engine.StatusDropped}
)

// Prune deletes the history p's retention lets go, as of now: finished
// runs older than Runs (a hook's own, if it sets one) beyond each hook's
// newest KeepLast runs; skip and drop records older than Skipped; and
// dispatched events older than Events. It never deletes a queued or
// running run, an event not yet dispatched, hook state, a hook's latest
// started run, the run that holds its latest slot, or its latest run with
// a context fingerprint (what skip_llm_if_unchanged compares with). It
// reads in chunks and deletes in write transactions of at most p.Batch
// rows, so the daemon's writes interleave; when runs went, it optimizes
// the search index, which is when the index lets go of them
// (optimizeIndex); then it frees the pages it emptied by incremental
// vacuum, in small steps.
func (d *DB) Prune(ctx context.Context, now time.Time, p PrunePolicy) (PruneStats, error) {
	start := d.clock.Mono()
	if p.Batch <= 0 {
		p.Batch = DefaultPruneBatch
	}
	st := PruneStats{DryRun: p.DryRun}
	if err := d.pruneRuns(ctx, now, p, &st); err != nil {
		return st, fmt.Errorf("prune runs: %w", err)
	}
	if err := d.pruneEvents(ctx, now, p, &st); err != nil {
		return st, fmt.Errorf("prune events: %w", err)
	}
	if !p.DryRun && st.Runs > 0 {
		if err := d.optimizeIndex(ctx); err != nil {
			return st, fmt.Errorf("prune runs: optimize the search index: %w", err)
		}
	}
	if !p.DryRun {
		freed, err := d.vacuum(ctx)
		st.FreedBytes = freed
		if err != nil {
			return st, fmt.Errorf("vacuum: %w", err)
		}
	}
	st.Took = clock.Since(d.clock, start)
	return st, nil
}

// hookBound is what pruning needs to know of one hook.
type hookBound struct {
	runsCutoff int64 // finished_at before this may go; 0: keep all
	keepSeq    int64 // runs at or after this seq are among the newest KeepLast
}

func (d *DB) pruneRuns(ctx context.Context, now time.Time, p PrunePolicy, st *PruneStats) error {
	hooks, err := d.runHooks(ctx)
	if err != nil {
		return err
	}
	var skipCutoff int64
	if p.Skipped > 0 {
		skipCutoff = now.Add(-p.Skipped).UnixNano()
	}
	// No record finished at or after newest can go: the scan, which
	// follows seq (the order records are made in), stops there.
	newest := skipCutoff
	bounds := make(map[string]hookBound, len(hooks))
	for _, h := range hooks {
		r := p.Retention.For(p.Hooks[h])
		var b hookBound
		if r.Runs > 0 {
			b.runsCutoff = now.Add(-r.Runs).UnixNano()
			newest = max(newest, b.runsCutoff)
			if b.keepSeq, err = d.keepSeq(ctx, h, r.KeepLast); err != nil {
				return err
			}
		}
		bounds[h] = b
	}
	if newest == 0 {
		return nil
	}
	protected, err := d.protectedRuns(ctx)
	if err != nil {
		return err
	}

	var (
		after int64
		batch []int64
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if !p.DryRun {
			if err := d.deleteRuns(ctx, batch, newest); err != nil {
				return err
			}
		}
		st.Batches++
		batch = batch[:0]
		return nil
	}
	for {
		rows, err := d.r.QueryContext(ctx, `SELECT seq, id, hook, status, coalesce(queued_at, 0),
			coalesce(finished_at, 0), fingerprint <> '' FROM runs WHERE seq > ? ORDER BY seq LIMIT ?`, after, scanChunk)
		if err != nil {
			return err
		}
		type row struct {
			seq, queued, finished int64
			id, hook, status      string
			fingerprint           bool
		}
		var chunk []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.seq, &r.id, &r.hook, &r.status, &r.queued, &r.finished, &r.fingerprint); err != nil {
				rows.Close()
				return err
			}
			chunk = append(chunk, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		done := len(chunk) < scanChunk
		for _, r := range chunk {
			after = r.seq
			if r.queued >= newest {
				done = true
				break
			}
			if protected[r.id] || r.finished == 0 {
				continue
			}
			b := bounds[r.hook]
			del, skip := false, false
			switch {
			case slices.Contains(skipRecords, engine.Status(r.status)):
				del, skip = skipCutoff != 0 && r.finished < skipCutoff, true
			case slices.Contains(retainedRuns, engine.Status(r.status)):
				del = b.runsCutoff != 0 && r.finished < b.runsCutoff && r.seq < b.keepSeq
				if del && r.fingerprint {
					// Keep the hook's latest fingerprint.
					if del, err = d.newerFingerprint(ctx, r.hook, r.seq); err != nil {
						return err
					}
				}
			}
			if !del {
				continue
			}
			if skip {
				st.Skipped++
			} else {
				st.Runs++
			}
			batch = append(batch, r.seq)
			if len(batch) >= p.Batch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if done {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return flush()
}

// deleteRuns deletes the runs of seqs in one transaction, checking again
// that each is final and finished before newest (a collapsed skip record
// may have repeated since it was chosen). Their slots go with them (ON
// DELETE CASCADE); the hooks' last slots stay in hook_state.
func (d *DB) deleteRuns(ctx context.Context, seqs []int64, newest int64) error {
	q, args := inList(`DELETE FROM runs WHERE status NOT IN ('queued', 'running') AND finished_at < ? AND seq IN `, seqs)
	return d.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, q, append([]any{newest}, args...)...)
		return err
	})
}

func (d *DB) pruneEvents(ctx context.Context, now time.Time, p PrunePolicy, st *PruneStats) error {
	if p.Events <= 0 {
		return nil
	}
	cutoff := now.Add(-p.Events).UnixNano()
	var after int64
	for {
		rows, err := d.r.QueryContext(ctx, `SELECT seq, coalesce(time, 0), dispatched FROM events
			WHERE seq > ? ORDER BY seq LIMIT ?`, after, scanChunk)
		if err != nil {
			return err
		}
		var del []int64
		n, done := 0, false
		for rows.Next() {
			var (
				seq, t     int64
				dispatched bool
			)
			if err := rows.Scan(&seq, &t, &dispatched); err != nil {
				rows.Close()
				return err
			}
			n++
			after = seq
			if t >= cutoff {
				done = true // the log is in time order: the rest is newer
				break
			}
			if t != 0 && dispatched {
				del = append(del, seq)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		st.Events += int64(len(del))
		for len(del) > 0 {
			b := del[:min(p.Batch, len(del))]
			del = del[len(b):]
			st.Batches++
			if p.DryRun {
				continue
			}
			q, args := inList(`DELETE FROM events WHERE dispatched = 1 AND seq IN `, b)
			if err := d.tx(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, q, args...)
				return err
			}); err != nil {
				return err
			}
		}
		if done || n < scanChunk {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// runHooks returns the names of the hooks that have runs, one index
// probe each (a skip-scan of runs_hook_seq).
func (d *DB) runHooks(ctx context.Context) ([]string, error) {
	rows, err := d.r.QueryContext(ctx, `WITH RECURSIVE h(name) AS (
			SELECT min(hook) FROM runs
			UNION ALL
			SELECT (SELECT min(hook) FROM runs WHERE hook > h.name) FROM h WHERE h.name IS NOT NULL)
		SELECT name FROM h WHERE name IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// keepSeq returns the seq of the hook's keep-th newest retained run (runs
// from it on are kept), or 0 when the hook has no more than keep of them.
// A keep of 0 keeps none.
func (d *DB) keepSeq(ctx context.Context, hook string, keep int) (int64, error) {
	if keep <= 0 {
		return 1<<63 - 1, nil
	}
	q, args := inList(`SELECT seq FROM runs WHERE hook = ? AND status IN `, statusArgs(retainedRuns))
	var seq int64
	err := d.r.QueryRowContext(ctx, q+` ORDER BY seq DESC LIMIT 1 OFFSET ?`,
		append(append([]any{hook}, args...), keep-1)...).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// protectedRuns returns the ids of the runs the gates and catch-up read:
// each hook's latest started run and the run that holds its latest slot.
func (d *DB) protectedRuns(ctx context.Context) (map[string]bool, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT last_run_id FROM hook_state WHERE last_run_id <> ''
		UNION SELECT s.run_id FROM hook_state h JOIN slots s ON s.hook = h.hook AND s.slot = h.last_slot`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

// newerFingerprint reports whether the hook has a run after seq with a
// context fingerprint.
func (d *DB) newerFingerprint(ctx context.Context, hook string, seq int64) (bool, error) {
	var one int
	err := d.r.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE hook = ? AND seq > ? AND fingerprint <> '' LIMIT 1`,
		hook, seq).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// inList appends a parenthesized list of placeholders to q.
func inList[T any](q string, vs []T) (string, []any) {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = v
	}
	return q + "(" + strings.TrimSuffix(strings.Repeat("?, ", len(vs)), ", ") + ")", args
}

func statusArgs(ss []engine.Status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
