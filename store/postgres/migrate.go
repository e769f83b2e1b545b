package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookd/hookd/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
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
	seq               BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id                TEXT    NOT NULL UNIQUE,
	hook              TEXT    NOT NULL,
	"trigger"         TEXT    NOT NULL DEFAULT '',
	slot              BIGINT,
	status            TEXT    NOT NULL,
	reason            TEXT    NOT NULL DEFAULT '',
	event_type        TEXT    NOT NULL DEFAULT '',
	event             TEXT,
	steps             TEXT,
	prompt            TEXT    NOT NULL DEFAULT '',
	response          TEXT    NOT NULL DEFAULT '',
	tool_calls        TEXT,
	prompt_tokens     BIGINT,
	completion_tokens BIGINT,
	cached_tokens     BIGINT,
	error             TEXT    NOT NULL DEFAULT '',
	fingerprint       TEXT    NOT NULL DEFAULT '',
	depth             INTEGER NOT NULL DEFAULT 0,
	queued_at         BIGINT,
	started_at        BIGINT,
	finished_at       BIGINT,
	outcome           TEXT,
	repeats           INTEGER NOT NULL DEFAULT 1,
	project           TEXT    NOT NULL DEFAULT '',
	procs             JSONB
);
CREATE INDEX runs_hook_seq ON runs (hook, seq);
CREATE INDEX runs_status_seq ON runs (status, seq);
CREATE INDEX runs_queued_at ON runs (queued_at);

CREATE TABLE hook_state (
	hook        TEXT    PRIMARY KEY,
	paused      BOOLEAN NOT NULL DEFAULT false,
	last_slot   BIGINT  NOT NULL DEFAULT 0,
	last_start  BIGINT  NOT NULL DEFAULT 0,
	last_run_id TEXT    NOT NULL DEFAULT '',
	last_status TEXT    NOT NULL DEFAULT ''
);

CREATE TABLE slots (
	hook   TEXT   NOT NULL,
	slot   BIGINT NOT NULL,
	run_id TEXT   NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	UNIQUE (hook, slot)
);
CREATE INDEX slots_run_id ON slots (run_id);

CREATE TABLE events (
	seq        BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id         TEXT    NOT NULL UNIQUE,
	type       TEXT    NOT NULL,
	data       TEXT    NOT NULL DEFAULT '{}',
	source     TEXT    NOT NULL DEFAULT '',
	time       BIGINT,
	depth      INTEGER NOT NULL DEFAULT 0,
	dispatched BOOLEAN NOT NULL DEFAULT true
);
CREATE INDEX events_type_seq ON events (type, seq);
CREATE INDEX events_pending ON events (seq) WHERE NOT dispatched;

CREATE TABLE watch_snapshots (
	hook     TEXT   PRIMARY KEY,
	saved_at BIGINT NOT NULL
);
CREATE TABLE watch_files (
	hook  TEXT   NOT NULL REFERENCES watch_snapshots (hook) ON DELETE CASCADE,
	path  TEXT   NOT NULL,
	size  BIGINT NOT NULL,
	mtime BIGINT NOT NULL,
	PRIMARY KEY (hook, path)
);

CREATE TABLE retries (
	run_id     TEXT    PRIMARY KEY,
	hook       TEXT    NOT NULL,
	retry_of   TEXT    NOT NULL,
	attempt    INTEGER NOT NULL,
	attempts   INTEGER NOT NULL,
	due_at     BIGINT  NOT NULL,
	event      TEXT,
	event_type TEXT    NOT NULL DEFAULT '',
	depth      INTEGER NOT NULL DEFAULT 0
);
`},
	{2, "cluster: nodes, leases, run owners", sqlCluster},              // cluster.go
	{3, "cluster: hook versions of nodes and runs", sqlHookVersions},   // hookversions.go
	{4, "token usage", sqlUsage},                                       // usage.go
	{5, "full-text search of runs", sqlSearch},                         // search.go
	{6, "cluster: runs released to the nodes", sqlReleased},            // member.go
	{7, "cluster: fires stored for the scheduler", sqlFires},           // fires.go
	{8, "cluster: the previous start of a released run", sqlPrevStart}, // member.go
	{9, "cluster: fires merged into pending runs", sqlFireMerges},      // fires.go
	{10, "hooks reached by pending events", sqlDispatches},             // events.go
	{11, "slot of the latest run", sqlLastRunSlot},                     // state.go
	{12, "run check failed", sqlRunCheckFailed},                        // runs.go
	{13, "event fate", sqlEventFate},                                   // events.go
	{14, "hooks first seen", sqlFirstSeen},                             // state.go
	{15, "search text capped", sqlSearchCaps},                          // search.go
	{16, "pending reruns", sqlReruns},                                  // reruns.go
	{17, "event trace parent", sqlEventTrace},                          // events.go
	{18, "usage tag", sqlUsageTag},                                     // usage.go
	{19, "rerun trace parent", sqlRerunTrace},                          // reruns.go
	{20, "run trace links", sqlRunTraceLinks},                          // runs.go
	{21, "retry trace parent", sqlRetryTrace},                          // state.go
	{22, "cluster: interrupted runs owed a follow-up", sqlOwed},        // followup.go
	{23, "cluster: runs whose outcome is untold", sqlUntold},           // outcomes.go
}

// Advisory lock keys (one 64-bit space per database). Arbitrary constants,
// "hookd" in ASCII in the high bytes, so they do not collide with another
// application's small integers by chance.
const (
	lockMigrate int64 = 0x686f6f6b64_000001 // held while migrating
	lockEvents  int64 = 0x686f6f6b64_000002 // held by each transaction that inserts events
	lockDaemon  int64 = 0x686f6f6b64_000003 // held by the single daemon (Lock)
)

// migrate brings the schema up to the last of ms, under an advisory lock
// so that nodes starting together migrate once. A database already
// current is only read; one beyond ms (written by a newer hookd) is
// refused. clock stamps the migrations applied.
func migrate(ctx context.Context, pool *pgxpool.Pool, ms []migration, clk clock.Clock) error {
	for i, m := range ms {
		if m.version != i+1 {
			return fmt.Errorf("migrate: migration %d (%s) has version %d, want %d", i, m.name, m.version, i+1)
		}
	}
	latest := len(ms)
	v, err := schemaVersion(ctx, pool)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v == latest {
		return nil
	}
	if v > latest {
		return newerSchemaError(v, latest)
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockMigrate); err != nil {
			return fmt.Errorf("lock for migration: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at BIGINT  NOT NULL)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		// Re-read under the lock: another node may have migrated meanwhile.
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if v > latest {
			return newerSchemaError(v, latest)
		}
		for _, m := range ms[v:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %d (%s): %w", m.version, m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, clk.Now().UnixNano()); err != nil {
				return fmt.Errorf("record migration %d: %w", m.version, err)
			}
		}
		return nil
	})
}

// schemaVersion returns the highest applied migration, 0 for a new database.
func schemaVersion(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var v int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		return 0, nil
	}
	return v, err
}

func newerSchemaError(have, want int) error {
	return fmt.Errorf("check schema version: database is at version %d but this hookd knows only up to %d; "+
		"it was written by a newer hookd: upgrade hookd or use another database", have, want)
}
