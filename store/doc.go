// Package store implements engine.Store on SQLite (mattn/go-sqlite3).
//
// # Schema
//
// The schema is built by the ordered migrations in migrate.go; the
// schema_migrations table records which have been applied. Opening a
// current database writes nothing, and a database written by a newer hookd
// is refused rather than misread.
//
//	runs        one row per trigger of a hook: a run that executed, or one a
//	            gate stopped, with its reason. seq (INTEGER PRIMARY KEY
//	            AUTOINCREMENT) orders the history; id (a ULID, UNIQUE) names
//	            it. event, steps and tool_calls hold JSON text; the token
//	            columns are NULL when the server reported no usage.
//	            Indexed by (hook, seq) and (status, seq).
//	hook_state  per hook: paused, the latest schedule slot claimed, the
//	            latest start, its run id and the slot it filled (the
//	            cooldown's), and when a scheduling hookd first loaded the
//	            hook (first_seen). The last status is read from that run's
//	            row (a run's end writes only runs).
//	slots       (hook, slot) -> run_id, UNIQUE(hook, slot): a schedule slot
//	            fires at most once, even across a crash and restart.
//	events      the event log: seq orders it, id (UNIQUE) makes publishing
//	            idempotent, data is a JSON object. Indexed by (type, seq).
//
// Times are INTEGER unix nanoseconds (NULL or 0 for the zero time) and read
// back in UTC.
//
// # Connections and locking
//
// The database runs in WAL mode with synchronous=NORMAL, busy_timeout=5000
// and foreign keys on. A DB holds two connection pools on the file: writes
// go through a single connection and every write transaction begins
// IMMEDIATE, so concurrent writers in one process wait their turn in
// database/sql instead of failing with "database is locked", and a writer
// never has to upgrade a read lock (the usual cause of SQLITE_BUSY that
// busy_timeout cannot help with). Reads use a separate query-only pool,
// which WAL lets run while a write is in progress. Another process writing
// the same file (a CLI command beside the daemon) is serialized by SQLite's
// file lock and waits up to busy_timeout.
//
// The frequent small writes (a run's start and end, events
// stored and marked dispatched) are group-committed (group.go): a write
// that finds the writer idle commits at once in its own transaction;
// writes that arrive during a commit wait and are then committed together,
// each in a savepoint of one transaction, so that a failing one is rolled
// back alone. Every caller is answered after the commit that holds its
// write returned, and a lost transaction fails every write in it: no
// guarantee is weaker than with one transaction per write.
//
// Lock is separate from Open: it takes an exclusive flock on the file
// dbPath+".lock", holding the owner's pid, so that two daemons cannot run
// on one database, while commands that only read can still Open it.
// Only the lock holder should call RecoverInterrupted.
package store
