package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hookd/hookd/clock"
)

// migration is one step of the schema's history. Versions start at 1 and
// increase by one; a released migration is never edited, only followed.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations is the schema's history, in order.
var migrations = []migration{
	{1, "initial schema", `
CREATE TABLE runs (
	seq               INTEGER PRIMARY KEY AUTOINCREMENT,
	id                TEXT    NOT NULL UNIQUE,
	hook              TEXT    NOT NULL,
	"trigger"         TEXT    NOT NULL DEFAULT '',
	slot              INTEGER,
	status            TEXT    NOT NULL,
	reason            TEXT    NOT NULL DEFAULT '',
	event_type        TEXT    NOT NULL DEFAULT '',
	event             TEXT,
	steps             TEXT,
	prompt            TEXT    NOT NULL DEFAULT '',
	response          TEXT    NOT NULL DEFAULT '',
	tool_calls        TEXT,
	prompt_tokens     INTEGER,
	completion_tokens INTEGER,
	cached_tokens     INTEGER,
	error             TEXT    NOT NULL DEFAULT '',
	fingerprint       TEXT    NOT NULL DEFAULT '',
	depth             INTEGER NOT NULL DEFAULT 0,
	queued_at         INTEGER,
	started_at        INTEGER,
	finished_at       INTEGER
);
CREATE INDEX runs_hook_seq ON runs (hook, seq);
CREATE INDEX runs_status_seq ON runs (status, seq);

CREATE TABLE hook_state (
	hook        TEXT    PRIMARY KEY,
	paused      INTEGER NOT NULL DEFAULT 0,
	last_slot   INTEGER NOT NULL DEFAULT 0,
	last_start  INTEGER NOT NULL DEFAULT 0,
	last_run_id TEXT    NOT NULL DEFAULT '',
	last_status TEXT    NOT NULL DEFAULT ''
);

CREATE TABLE slots (
	hook   TEXT    NOT NULL,
	slot   INTEGER NOT NULL,
	run_id TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	UNIQUE (hook, slot)
);
CREATE INDEX slots_run_id ON slots (run_id);

CREATE TABLE events (
	seq    INTEGER PRIMARY KEY AUTOINCREMENT,
	id     TEXT    NOT NULL UNIQUE,
	type   TEXT    NOT NULL,
	data   TEXT    NOT NULL DEFAULT '{}',
	source TEXT    NOT NULL DEFAULT '',
	time   INTEGER,
	depth  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX events_type_seq ON events (type, seq);
`},
	{2, "event dispatch state", sqlEventDispatch},  // dispatch.go
	{3, "watch snapshots", sqlWatchSnapshots},      // snapshot.go
	{4, "run outcome", sqlRunOutcome},              // outcome.go
	{5, "retention", sqlRetention},                 // prune.go
	{6, "run process groups", sqlRunProcs},         // procs.go
	{7, "run project label", sqlRunProject},        // runs.go
	{8, "pending retries", sqlRetries},             // retries.go
	{9, "runs by time", sqlRunsByTime},             // brief.go
	{10, "run search index", sqlRunSearch},         // search.go
	{11, "token usage", sqlUsage},                  // usage.go
	{12, "run search mark", sqlRunSearchMark},      // searchindex.go
	{13, "events by type", sqlEventsByType},        // events.go
	{14, "event dispatches", sqlDispatches},        // dispatch.go
	{15, "run hook version", sqlRunHookVersion},    // runs.go
	{16, "slot of the latest run", sqlLastRunSlot}, // hookstate.go
	{17, "run check failed", sqlRunCheckFailed},    // runs.go
	{18, "event fate", sqlEventFate},               // dispatch.go
	{19, "hooks first seen", sqlFirstSeen},         // hookstate.go
	{20, "run search text", sqlRunSearchText},      // searchindex.go
	{21, "pending reruns", sqlReruns},              // reruns.go
	{22, "event trace parent", sqlEventTrace},      // dispatch.go
	{23, "usage tag", sqlUsageTag},                 // usage.go
	{24, "rerun trace parent", sqlRerunTrace},      // reruns.go
	{25, "run trace links", sqlRunTraceLinks},      // runs.go
	{26, "retry trace parent", sqlRetryTrace},      // retries.go
	{27, "owed follow-ups", sqlOwed},               // followup.go
}

const sqlSchemaMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT    NOT NULL,
	applied_at INTEGER NOT NULL
)`

// migrate brings the schema of db up to the last of ms. A database that is
// already current is only read; a database whose version is beyond ms (written
// by a newer hookd) is refused. clock stamps the migrations applied.
func migrate(ctx context.Context, db *sql.DB, ms []migration, clk clock.Clock) error {
	for i, m := range ms {
		if m.version != i+1 {
			return fmt.Errorf("migrate: migration %d (%s) has version %d, want %d", i, m.name, m.version, i+1)
		}
	}
	latest := len(ms)

	// Fast path without a write lock, so that opening a current database
	// (a CLI command next to a running daemon) writes nothing.
	v, err := schemaVersion(ctx, db)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v == latest {
		return nil
	}
	if v > latest {
		return newerSchemaError(v, latest)
	}

	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one migrator at a time
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, sqlSchemaMigrations); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	// Re-read under the lock: another process may have migrated meanwhile.
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > latest {
		return newerSchemaError(v, latest)
	}
	for _, m := range ms[v:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("apply migration %d (%s): %w", m.version, m.name, err)
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, clk.Now().UnixNano()); err != nil {
			return fmt.Errorf("record migration %d: %w", m.version, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit migrations: %w", err)
	}
	return nil
}

// schemaVersion returns the highest applied migration, 0 for a new database.
func schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var n int
	err := q.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
	if err != nil || n == 0 {
		return 0, err
	}
	var v int
	err = q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

func newerSchemaError(have, want int) error {
	return fmt.Errorf("check schema version: database is at version %d but this hookd knows only up to %d; "+
		"it was written by a newer hookd: upgrade hookd or use another --db", have, want)
}
