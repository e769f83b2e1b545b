package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

var _ engine.Store = (*DB)(nil)

// DB is the SQLite store. It is safe for concurrent use.
//
// Writes go through one connection (w) in BEGIN IMMEDIATE transactions, so
// writers in this process queue in database/sql instead of failing with
// SQLITE_BUSY; reads use a separate pool (r) that WAL lets run alongside
// the writer.
type DB struct {
	path string
	// real is path with its symbolic links resolved, resolved once in
	// Open: SQLite names the -wal and -shm files after the database
	// file's real path, so those of a database opened through a link lie
	// beside its target. Everything that reads or narrows them uses
	// sidecar.
	real   string
	opened os.FileInfo // the file Open opened, for Check
	clock  clock.Clock // Options.Clock
	origin clock.Mono  // clock's monotonic reading at Open, the zero of checkpointer.hardAfter
	w      *sql.DB
	r      *sql.DB

	// Prepared on w; transactions reuse them through tx.StmtContext.
	stmtInsertRun  *sql.Stmt
	stmtUpsertRun  *sql.Stmt
	stmtFinishRun  *sql.Stmt
	stmtSlotOwner  *sql.Stmt
	stmtClaimSlot  *sql.Stmt
	stmtBumpSlot   *sql.Stmt
	stmtStartState *sql.Stmt
	stmtInsertEvts [len(eventChunks)]*sql.Stmt // inserts of eventChunks[i] events
	stmtEventSeq   *sql.Stmt
	stmtMarkEvt    *sql.Stmt
	stmtReached    *sql.Stmt // records a pending event's dispatch to a hook (dispatch.go)
	stmtUnreach    *sql.Stmt // drops those records once it is marked
	stmtAddProc    *sql.Stmt

	// Prepared on r.
	stmtGetRun *sql.Stmt

	gc  committer    // group commit of the frequent writes (group.go)
	obs Observer     // told of event writes (Observe)
	ck  checkpointer // copies the log into the database file (checkpoint.go)
	ix  indexer      // the search index's background indexer (searchindex.go)
	tr  trimmer      // gives the C heap's free pages back after large runs (malloc_glibc.go)

	closeOnce sync.Once
	closeErr  error
}

// readerCacheKiB is the page cache of each reading connection, in KiB
// (SQLite's default is 2,000 for every connection). A run read back with
// a megabyte of output passes its 256 overflow pages through the
// reader's cache, which kept them all, a megabyte a connection, until
// that connection's next read; readers are pooled, one a request in
// flight. A reader's cache is emptied anyway whenever the writer has
// committed since (WAL mode), so a larger one pays off only within a
// statement that revisits pages (a search, a long list): 512 KiB holds
// the interior pages of the indexes they walk. The writer keeps the
// default: its transactions write the pages it caches.
const readerCacheKiB = 512

// Open opens (creating if needed) the SQLite database at path and brings
// its schema up to date. It refuses a database written by a newer hookd.
// Open does not take the daemon's lock; see Lock.
func Open(path string, opts ...Option) (*DB, error) {
	o := Configure(opts)
	if path == "" {
		return nil, errors.New("open store: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open store: create directory: %w", err)
	}
	if err := createPrivate(abs); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("open store: resolve database path: %w", err)
	}
	d := &DB{path: abs, real: real, clock: o.Clock, origin: o.Clock.Mono()}

	// The writer sets WAL (persistent in the file) before any reader opens.
	d.w, err = sql.Open(writeDriver, dsn(abs, url.Values{
		"_journal_mode": {"WAL"},
		"_busy_timeout": {"5000"},
		"_synchronous":  {"NORMAL"},
		"_foreign_keys": {"on"},
		"_txlock":       {"immediate"},
		"_auto_vacuum":  {"incremental"}, // takes effect in a new file; see EnableIncrementalVacuum
	}))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	d.w.SetMaxOpenConns(1)
	d.w.SetMaxIdleConns(1)
	d.w.SetConnMaxLifetime(0)
	d.w.SetConnMaxIdleTime(0)
	if err := d.w.Ping(); err != nil {
		d.w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if err := migrate(context.Background(), d.w, migrations, d.clock); err != nil {
		d.w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if err := d.initCheckpoints(); err != nil {
		d.w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if err := d.restrictSidecars(); err != nil {
		d.w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}

	if d.opened, err = os.Stat(abs); err != nil {
		d.w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}

	d.r, err = sql.Open("sqlite3", dsn(abs, url.Values{
		"_busy_timeout": {"5000"},
		"_foreign_keys": {"on"},
		"_query_only":   {"true"},
		"_cache_size":   {fmt.Sprint(-readerCacheKiB)},
	}))
	if err != nil {
		d.w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	d.r.SetMaxIdleConns(4)

	d.gc.idle.L = &d.gc.mu
	if err := d.prepare(); err != nil {
		d.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	return d, nil
}

// createPrivate makes sure the database file exists with mode 0600
// before SQLite opens it, whatever the umask: SQLite gives the -wal and
// -shm files it creates the mode of the database file, so they are 0600
// too. A database that exists with a wider mode is narrowed to 0600.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("restrict database file: %w", err)
	}
	return nil
}

// sidecar returns the path of the database's file with suffix ("-wal",
// "-shm"): beside the real database file, where SQLite puts it.
func (d *DB) sidecar(suffix string) string { return d.real + suffix }

// restrictSidecars sets the -wal and -shm files of the database to 0600,
// for those an older hookd or another tool left wider.
func (d *DB) restrictSidecars() error {
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Chmod(d.sidecar(suffix), 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("restrict %s: %w", d.sidecar(suffix), err)
		}
	}
	return nil
}

// writeDriver is the database/sql driver of the write connection. Tests
// swap in one that observes what each transaction writes.
var writeDriver = "sqlite3"

// dsn builds a SQLite URI filename for an absolute path.
func dsn(abs string, params url.Values) string {
	u := url.URL{Scheme: "file", Path: abs}
	return u.String() + "?" + params.Encode()
}

// Path returns the absolute path of the database file.
func (d *DB) Path() string { return d.path }

// Check reports whether Path still names the file this DB opened: a
// removed or replaced database is a *GoneError. The daemon checks it (with
// DaemonLock.Check) periodically.
func (d *DB) Check() error {
	return sameFile(d.path, "database", func() (os.FileInfo, error) { return d.opened, nil })
}

// Close closes the database. It is safe to call more than once; later
// calls return the result of the first.
func (d *DB) Close() error {
	d.closeOnce.Do(func() {
		d.stopCommitter() // the queued writes are committed first
		var errs []error
		if err := d.stopIndexer(); err != nil { // then the runs they queued for the index
			errs = append(errs, fmt.Errorf("index runs: %w", err))
		}
		errs = append(errs, d.stopCheckpointer()) // then the log goes into the database file
		for _, s := range []*sql.Stmt{
			d.stmtInsertRun, d.stmtUpsertRun, d.stmtFinishRun, d.stmtSlotOwner,
			d.stmtClaimSlot, d.stmtBumpSlot, d.stmtStartState,
			d.stmtEventSeq, d.stmtMarkEvt, d.stmtReached, d.stmtUnreach, d.stmtAddProc, d.stmtGetRun,
			d.gc.savepoint, d.gc.release, d.gc.rollbackTo,
		} {
			if s != nil {
				errs = append(errs, s.Close())
			}
		}
		for _, s := range d.stmtInsertEvts {
			if s != nil {
				errs = append(errs, s.Close())
			}
		}
		if d.r != nil {
			errs = append(errs, d.r.Close())
		}
		if d.w != nil {
			// Let SQLite refresh its planner statistics; failure is harmless.
			_, _ = d.w.Exec("PRAGMA optimize")
			errs = append(errs, d.w.Close())
		}
		if err := errors.Join(errs...); err != nil {
			d.closeErr = fmt.Errorf("close store: %w", err)
		}
	})
	return d.closeErr
}

func (d *DB) prepare() error {
	type prep struct {
		db   *sql.DB
		dst  **sql.Stmt
		text string
	}
	stmts := []prep{
		{d.w, &d.stmtInsertRun, sqlInsertRun},
		{d.w, &d.stmtUpsertRun, sqlUpsertRun},
		{d.w, &d.stmtFinishRun, sqlFinishRun},
		{d.w, &d.stmtSlotOwner, `SELECT run_id FROM slots WHERE hook = ? AND slot = ?`},
		{d.w, &d.stmtClaimSlot, `INSERT OR IGNORE INTO slots (hook, slot, run_id) VALUES (?, ?, ?)`},
		{d.w, &d.stmtBumpSlot, `INSERT INTO hook_state (hook, last_slot) VALUES (?, ?)
			ON CONFLICT (hook) DO UPDATE SET last_slot = max(last_slot, excluded.last_slot)`},
		{d.w, &d.stmtStartState, `INSERT INTO hook_state (hook, last_slot, last_start, last_run_id, last_status, last_run_slot)
			VALUES (?1, ?2, ?3, ?4, ?5, ?2)
			ON CONFLICT (hook) DO UPDATE SET
				last_slot = max(last_slot, excluded.last_slot),
				last_start = excluded.last_start,
				last_run_id = excluded.last_run_id,
				last_status = excluded.last_status,
				last_run_slot = excluded.last_run_slot`},
		{d.w, &d.stmtEventSeq, `SELECT seq FROM events WHERE id = ?`},
		{d.w, &d.stmtMarkEvt, `UPDATE events SET dispatched = 1 WHERE seq = ? AND dispatched = 0`},
		{d.w, &d.stmtReached, sqlReached},
		{d.w, &d.stmtUnreach, `DELETE FROM event_dispatches WHERE seq = ?`},
		{d.w, &d.stmtAddProc, `UPDATE runs SET procs = json_insert(coalesce(procs, '[]'), '$[#]', json(?))
			WHERE id = ?`},
		{d.r, &d.stmtGetRun, `SELECT ` + runCols + `, seq FROM runs WHERE id = ?`},
		{d.w, &d.gc.savepoint, `SAVEPOINT w`},
		{d.w, &d.gc.release, `RELEASE w`},
		{d.w, &d.gc.rollbackTo, `ROLLBACK TO w`},
	}
	for i, n := range eventChunks {
		stmts = append(stmts, prep{d.w, &d.stmtInsertEvts[i], sqlInsertEvents(n)})
	}
	for _, p := range stmts {
		s, err := p.db.Prepare(p.text)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", firstLine(p.text), err)
		}
		*p.dst = s
	}
	return nil
}

// tx runs fn in a write transaction of its own (BEGIN IMMEDIATE) and
// commits it when fn returns nil. The frequent small writes use write
// (group.go), which may share a commit; tx is for the rare and long ones.
func (d *DB) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
