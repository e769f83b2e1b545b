package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookd/hookd/engine"
	"github.com/jackc/pgx/v5"
)

// Fires a node that does not schedule stores for the scheduler to decide
// (engine/clusterfire.go): a row per request, answered by the scheduler
// in the transaction that holds the row locked, so a request is decided
// once, and a node withdrawing one either deletes it before the
// scheduler took it or finds it answered.

// sqlFires is migration 7. Written to apply again harmlessly.
const sqlFires = `
CREATE TABLE IF NOT EXISTS fires (
	seq          BIGSERIAL   PRIMARY KEY,
	id           TEXT        NOT NULL UNIQUE,
	request      JSONB       NOT NULL,
	requested_at TIMESTAMPTZ NOT NULL DEFAULT now(),
	answer       JSONB,
	answered_at  TIMESTAMPTZ
);
CREATE INDEX IF NOT EXISTS fires_unanswered ON fires (seq) WHERE answer IS NULL;
`

// sqlFireMerges is migration 9: the fire requests the scheduler merged
// into a pending run, each recorded in the transaction of the merge, so
// that a scheduler deciding a request again (its answer was not stored:
// the scheduler before it died) answers with that run instead of firing
// again. No foreign key to fires: the request's row is locked by the
// transaction deciding it while the merge commits.
const sqlFireMerges = `
CREATE TABLE IF NOT EXISTS fire_merges (
	fire_id   TEXT        PRIMARY KEY,
	run_id    TEXT        NOT NULL,
	merged_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
`

// MergeFire stores r, the pending run fire request fire merged into, as
// UpdateQueued does, and records the merge (FireMergedInto), in one
// transaction.
func (m *Member) MergeFire(ctx context.Context, r *engine.Run, fire string) error {
	err := m.db.tx(ctx, func(tx pgx.Tx) error {
		if err := updateQueued(ctx, tx, r, engine.Merged{}); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO fire_merges (fire_id, run_id) VALUES ($1, $2)
			ON CONFLICT (fire_id) DO NOTHING`, fire, r.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("merge fire request %s into run %s: %w", fire, r.ID, err)
	}
	return nil
}

// FireMergedInto returns the id of the run fire request fire was merged
// into; one never merged wraps engine.ErrNotFound.
func (m *Member) FireMergedInto(ctx context.Context, fire string) (string, error) {
	var id string
	err := m.db.pool.QueryRow(ctx, `SELECT run_id FROM fire_merges WHERE fire_id = $1`, fire).Scan(&id)
	if errNoRows(err) {
		return "", fmt.Errorf("read the merge of fire request %s: %w", fire, engine.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("read the merge of fire request %s: %w", fire, err)
	}
	return id, nil
}

// RequestFire stores req and wakes the scheduler (ChannelEvents, at
// commit).
func (m *Member) RequestFire(ctx context.Context, req engine.FireRequest) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("store fire request %s: %w", req.ID, err)
	}
	err = m.db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO fires (id, request) VALUES ($1, $2)`, req.ID, b); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, 'fire')`, ChannelEvents)
		return err
	})
	if err != nil {
		return fmt.Errorf("store fire request %s: %w", req.ID, err)
	}
	return nil
}

// FireAnswer returns the answer to request id, ok false while there is
// none; a request that is not stored wraps engine.ErrNotFound.
func (m *Member) FireAnswer(ctx context.Context, id string) (engine.FireAnswer, bool, error) {
	var (
		a   engine.FireAnswer
		raw []byte
	)
	err := m.db.pool.QueryRow(ctx, `SELECT answer FROM fires WHERE id = $1`, id).Scan(&raw)
	if errNoRows(err) {
		return a, false, fmt.Errorf("read the answer to fire request %s: %w", id, engine.ErrNotFound)
	}
	if err != nil {
		return a, false, fmt.Errorf("read the answer to fire request %s: %w", id, err)
	}
	if raw == nil {
		return a, false, nil
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, false, fmt.Errorf("read the answer to fire request %s: %w", id, err)
	}
	return a, true, nil
}

// WithdrawFire deletes request id unless it is answered. The scheduler
// holds a request it decides locked, so the delete waits for its answer
// and then deletes nothing.
func (m *Member) WithdrawFire(ctx context.Context, id string) (bool, error) {
	tag, err := m.db.pool.Exec(ctx, `DELETE FROM fires WHERE id = $1 AND answer IS NULL`, id)
	if err != nil {
		return false, fmt.Errorf("withdraw fire request %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// DecideFires takes the unanswered requests one at a time, oldest first
// (FOR UPDATE SKIP LOCKED: a request being withdrawn, or decided by a
// scheduler that lost the lease and has not noticed yet, is skipped),
// and stores decide's answer in the transaction that holds the request,
// then notifies ChannelDone (after the commit: wake). It stops at the first request decide fails,
// which stays unanswered. The answer is fenced by the lease, as the
// scheduler's records are (Fence): a scheduler that lost the lease while
// it decided leaves the request unanswered, for the next one to decide,
// instead of answering with a run or merge whose record was refused.
// The lease is checked after decide returns, not before: decide's own
// fenced writes share the lease row, and a renewal waiting for it
// between the two would leave them queued behind it.
func (m *Member) DecideFires(ctx context.Context, decide func(context.Context, engine.FireRequest) (engine.FireAnswer, error)) (int, error) {
	// Answers are read within moments; an hour-old one is nobody's.
	if _, err := m.db.pool.Exec(ctx, `DELETE FROM fires WHERE answered_at < now() - interval '1 hour'`); err != nil {
		return 0, fmt.Errorf("decide fires: delete old answers: %w", err)
	}
	if _, err := m.db.pool.Exec(ctx, `DELETE FROM fire_merges WHERE merged_at < now() - interval '1 hour'`); err != nil {
		return 0, fmt.Errorf("decide fires: delete old merges: %w", err)
	}
	n := 0
	for {
		found, answered := false, ""
		err := m.db.tx(ctx, func(tx pgx.Tx) error {
			var (
				id  string
				raw []byte
			)
			err := tx.QueryRow(ctx, `SELECT id, request FROM fires WHERE answer IS NULL
				ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&id, &raw)
			if errNoRows(err) {
				return nil
			}
			if err != nil {
				return err
			}
			found = true
			var req engine.FireRequest
			if err := json.Unmarshal(raw, &req); err != nil {
				return fmt.Errorf("fire request %s: %w", id, err)
			}
			a, err := decide(ctx, req)
			if err != nil {
				return fmt.Errorf("fire request %s: %w", id, err)
			}
			b, err := json.Marshal(a)
			if err != nil {
				return fmt.Errorf("fire request %s: %w", id, err)
			}
			l, held := m.current()
			if !held {
				return fmt.Errorf("answer fire request %s: %w", id, engine.ErrLeaseLost)
			}
			if err := fence(ctx, tx, l, m.Interval()); err != nil {
				return fmt.Errorf("answer fire request %s: %w", id, fenceErr(err))
			}
			answered = id
			_, err = tx.Exec(ctx, `UPDATE fires SET answer = $2, answered_at = now() WHERE id = $1`, id, b)
			return err
		})
		if err != nil {
			return n, fmt.Errorf("decide fires: %w", err)
		}
		if !found {
			return n, nil
		}
		m.db.wake(ctx, m.Interval(), ChannelDone, "fire:"+answered)
		n++
	}
}
