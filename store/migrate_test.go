package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/clock"
)

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	d, path := openTest(t)
	v, err := schemaVersion(ctx, d.r)
	mustRun(t, err)
	if v != len(migrations) {
		t.Fatalf("fresh database at version %d, want %d", v, len(migrations))
	}
	var mode string
	mustRun(t, d.w.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	if mode != "wal" {
		t.Errorf("journal_mode = %s, want wal", mode)
	}
	var fk, timeout, sync int
	mustRun(t, d.w.QueryRow(`PRAGMA foreign_keys`).Scan(&fk))
	mustRun(t, d.w.QueryRow(`PRAGMA busy_timeout`).Scan(&timeout))
	mustRun(t, d.w.QueryRow(`PRAGMA synchronous`).Scan(&sync))
	if fk != 1 || timeout != 5000 || sync != 1 {
		t.Errorf("foreign_keys = %d, busy_timeout = %d, synchronous = %d; want 1, 5000, 1 (NORMAL)", fk, timeout, sync)
	}
	mustRun(t, d.Close())

	// Reopening a current database applies nothing and writes nothing.
	before := countMigrations(t, path)
	d2, err := Open(path)
	mustRun(t, err)
	mustRun(t, d2.Close())
	if after := countMigrations(t, path); after != before {
		t.Errorf("reopen changed schema_migrations: %d rows, then %d", before, after)
	}
}

func countMigrations(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	mustRun(t, err)
	defer db.Close()
	var n int
	mustRun(t, db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n))
	return n
}

func TestMigrateStepwise(t *testing.T) {
	// A database at an older version gets only the missing migrations.
	ctx := context.Background()
	ms := []migration{
		{1, "one", `CREATE TABLE a (x INTEGER)`},
		{2, "two", `CREATE TABLE b (x INTEGER)`},
	}
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "m.db")+"?_txlock=immediate")
	mustRun(t, err)
	defer db.Close()
	mustRun(t, migrate(ctx, db, ms[:1], clock.System{}))
	mustRun(t, migrate(ctx, db, ms, clock.System{}))
	mustRun(t, migrate(ctx, db, ms, clock.System{}))
	v, err := schemaVersion(ctx, db)
	mustRun(t, err)
	if v != 2 {
		t.Errorf("version %d, want 2", v)
	}
	// A broken migration leaves the database as it was.
	bad := append(ms, migration{3, "bad", `CREATE TABLE c (x INTEGER); SYNTAX ERROR`})
	if err := migrate(ctx, db, bad, clock.System{}); err == nil || !strings.Contains(err.Error(), "apply migration 3 (bad)") {
		t.Errorf("broken migration: %v", err)
	}
	if v, _ := schemaVersion(ctx, db); v != 2 {
		t.Errorf("after a failed migration version %d, want 2", v)
	}
	// Versions must be 1, 2, 3...
	if err := migrate(ctx, db, []migration{{2, "gap", ``}}, clock.System{}); err == nil {
		t.Error("a migration list with a gap was accepted")
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	d, path := openTest(t)
	_, err := d.w.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0)`, len(migrations)+1)
	mustRun(t, err)
	mustRun(t, d.Close())

	d2, err := Open(path)
	if err == nil {
		d2.Close()
		t.Fatal("Open of a database from a newer hookd succeeded")
	}
	if !strings.Contains(err.Error(), "newer hookd") {
		t.Errorf("error does not say why: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(""); err == nil {
		t.Error("Open(\"\") succeeded")
	}
	// A parent that is a file cannot be created.
	file := filepath.Join(t.TempDir(), "file")
	mustRun(t, os.WriteFile(file, nil, 0o600))
	if _, err := Open(filepath.Join(file, "hookd.db")); err == nil || !strings.HasPrefix(err.Error(), "open store") {
		t.Errorf("Open under a file: %v", err)
	}
}

func TestOpenPathWithSpecialCharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir with space?#%", "hookd.db")
	d, err := Open(path)
	mustRun(t, err)
	defer d.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at %s: %v", path, err)
	}
}

func TestMigrateLastRunSlot(t *testing.T) {
	// A database of before the last run's slot was kept gets it from the
	// hooks' latest runs: the first slot after the upgrade is judged on
	// slots already.
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hookd.db")
	db, err := sql.Open("sqlite3", path+"?_txlock=immediate")
	mustRun(t, err)
	i := slices.IndexFunc(migrations, func(m migration) bool { return m.sql == sqlLastRunSlot })
	mustRun(t, migrate(ctx, db, migrations[:i], clock.System{}))
	slot := time.Date(2025, 3, 14, 15, 0, 0, 0, time.UTC)
	_, err = db.Exec(`INSERT INTO runs (id, hook, slot, status) VALUES ('s', 'slotted', ?, 'completed'), ('m', 'manual', NULL, 'completed');
		INSERT INTO hook_state (hook, last_slot, last_start, last_run_id) VALUES ('slotted', ?, ?, 's'), ('manual', 0, ?, 'm'), ('gone', 0, ?, 'x')`,
		slot.UnixNano(), slot.UnixNano(), slot.Add(time.Minute).UnixNano(), slot.UnixNano(), slot.UnixNano())
	mustRun(t, err)
	mustRun(t, db.Close())

	d, err := Open(path)
	mustRun(t, err)
	defer d.Close()
	states, err := d.HookStates(ctx)
	mustRun(t, err)
	for hook, want := range map[string]time.Time{"slotted": slot, "manual": {}, "gone": {}} {
		if got := states[hook].LastRunSlot; !got.Equal(want) {
			t.Errorf("%s: last run slot %v, want %v", hook, got, want)
		}
	}
}
