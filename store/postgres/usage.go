package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/store"
	"github.com/jackc/pgx/v5"
)

// sqlUsage is the spend ledger, as in SQLite (store/usage.go).
const sqlUsage = `CREATE TABLE token_usage (
	run_id     TEXT    PRIMARY KEY,
	hook       TEXT    NOT NULL,
	model      TEXT    NOT NULL DEFAULT '',
	at         BIGINT  NOT NULL,
	prompt     BIGINT  NOT NULL DEFAULT 0,
	completion BIGINT  NOT NULL DEFAULT 0,
	unreported BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX token_usage_at ON token_usage (at);`

// sqlUsageTag tags the usage that no run spent: a replay's (budget.Usage.Tag).
const sqlUsageTag = `ALTER TABLE token_usage ADD COLUMN IF NOT EXISTS tag TEXT NOT NULL DEFAULT '';`

// AddUsage records a run's token usage and deletes records older than
// budget.UsageKept before it.
func (d *DB) AddUsage(ctx context.Context, u *budget.Usage) error {
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO token_usage (run_id, hook, model, at, prompt, completion, unreported, tag)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (run_id) DO UPDATE SET hook = EXCLUDED.hook, model = EXCLUDED.model, at = EXCLUDED.at,
				prompt = EXCLUDED.prompt, completion = EXCLUDED.completion, unreported = EXCLUDED.unreported, tag = EXCLUDED.tag`,
			u.RunID, u.Hook, u.Model, timeInt(u.At), u.Prompt, u.Completion, u.Unreported, u.Tag); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM token_usage WHERE at < $1`, timeInt(u.At.Add(-budget.UsageKept)))
		return err
	})
	if err != nil {
		return fmt.Errorf("add token usage of run %s: %w", u.RunID, err)
	}
	return nil
}

// UsageSince returns the usage records at or after since, oldest first.
func (d *DB) UsageSince(ctx context.Context, since time.Time) ([]*budget.Usage, error) {
	rows, err := d.pool.Query(ctx, `SELECT `+store.UsageCols+`
		FROM token_usage WHERE at >= $1 ORDER BY at, run_id`, timeInt(since))
	if err != nil {
		return nil, fmt.Errorf("list token usage: %w", err)
	}
	defer rows.Close()
	out, err := store.Collect(rows, store.ScanUsage)
	if err != nil {
		return nil, fmt.Errorf("list token usage: %w", err)
	}
	return out, nil
}
