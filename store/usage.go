package store

import (
	"context"
	"fmt"
	"time"

	"github.com/hookd/hookd/budget"
)

// sqlUsage adds the spend ledger: one row per run whose model stage made
// a call, with the tokens its server reported, so that a restart keeps
// counting the budgets' windows. Rows are kept budget.UsageKept, apart
// from the runs' retention (a pruned run keeps counting).
const sqlUsage = `CREATE TABLE token_usage (
	run_id     TEXT    PRIMARY KEY,
	hook       TEXT    NOT NULL,
	model      TEXT    NOT NULL DEFAULT '',
	at         INTEGER NOT NULL,
	prompt     INTEGER NOT NULL DEFAULT 0,
	completion INTEGER NOT NULL DEFAULT 0,
	unreported INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX token_usage_at ON token_usage (at);`

// sqlUsageTag tags the usage that no run spent: a replay's (budget.Usage.Tag).
const sqlUsageTag = `ALTER TABLE token_usage ADD COLUMN tag TEXT NOT NULL DEFAULT '';`

// AddUsage records a run's token usage and deletes records older than
// budget.UsageKept before it.
func (d *DB) AddUsage(ctx context.Context, u *budget.Usage) error {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("add token usage of run %s: %w", u.RunID, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO token_usage
		(run_id, hook, model, at, prompt, completion, unreported, tag) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		u.RunID, u.Hook, u.Model, timeInt(u.At), u.Prompt, u.Completion, u.Unreported, u.Tag); err != nil {
		return fmt.Errorf("add token usage of run %s: %w", u.RunID, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM token_usage WHERE at < ?`, timeInt(u.At.Add(-budget.UsageKept))); err != nil {
		return fmt.Errorf("prune token usage: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("add token usage of run %s: %w", u.RunID, err)
	}
	return nil
}

// UsageSince returns the usage records at or after since, oldest first.
func (d *DB) UsageSince(ctx context.Context, since time.Time) ([]*budget.Usage, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT `+UsageCols+`
		FROM token_usage WHERE at >= ? ORDER BY at, run_id`, timeInt(since))
	if err != nil {
		return nil, fmt.Errorf("list token usage: %w", err)
	}
	defer rows.Close()
	out, err := Collect(rows, ScanUsage)
	if err != nil {
		return nil, fmt.Errorf("list token usage: %w", err)
	}
	return out, nil
}
