// Package postgres implements hookd's store on PostgreSQL (jackc/pgx),
// for a database several hookd nodes share. It keeps the same contract
// as the SQLite store in package store: both pass the suite in package
// store/storetest.
//
// # Schema
//
// The schema is built by the ordered migrations in migrate.go, recorded
// in schema_migrations like SQLite's; migrating takes a transaction-level
// advisory lock, so nodes starting together migrate once. A database
// written by a newer hookd is refused. The tables mirror the SQLite
// store's: runs, hook_state, slots (UNIQUE (hook, slot): a schedule slot
// fires at most once, decided in the transaction that records the run),
// events, watch_snapshots and watch_files, retries. Times are BIGINT unix
// nanoseconds, as in SQLite, so that they round-trip exactly (timestamptz
// keeps microseconds). JSON is stored as text, byte for byte.
//
// # Ordering of events
//
// Sequence numbers are handed out before commit, so with several writers
// a reader could see seq N+1 before N commits and skip N for good. Every
// transaction that inserts events first takes one transaction-level
// advisory lock, so events commit in seq order and EventsAfter never
// skips one: a reader that sees seq N has seen every event before it.
package postgres
