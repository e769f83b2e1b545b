package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/store/postgres"
)

// The daemon's store is an engine.Store: the SQLite file (store.DB) or a
// PostgreSQL database (postgres.DB, with database: postgres://... in
// hookd.yaml, HOOKD_DATABASE or --db). Both implement the whole contract
// and pass its suite in store/storetest.

// Opened is a store opened under its lock (LockAndOpen): the one store
// contract, and the store's own type for what only that store does.
type Opened struct {
	Store    engine.Store
	SQLite   *store.DB    // when the store is the SQLite file (vacuum, file checks); else nil
	Postgres *postgres.DB // when it is PostgreSQL (cluster membership); else nil
	Lock     Lock
	// Clock is the one clock the store reads, and the engine and all
	// else that waits or measures after it (Local.Clock).
	Clock clock.Clock
}

// Lock lets one daemon at a time use a database.
type Lock interface {
	Check() error
	Unlock() error
}

// dbTimeout bounds connecting to PostgreSQL and taking its lock.
const dbTimeout = 30 * time.Second

// LockAndOpen takes the database's daemon lock for the command holder
// (store.Daemon for `hookd serve`, else the command's name, recorded in
// a SQLite lock file) and opens the store. On PostgreSQL a node of a cluster (node
// set: `hookd serve`) takes its node lock, which any number of nodes of
// different names hold at once; anything else (node "", an offline
// command) takes the database alone.
//
// With waiting set (`hookd serve`), a lock held by a hookd command run
// without a daemon is waited for, until ctx ends; waiting is called with
// the command and its pid when the wait begins, and again if another
// command takes the lock meanwhile (store.LockWait, lockPostgres).
// Without it, a held lock is an error at once.
func LockAndOpen(ctx context.Context, d *config.Daemon, holder, node string, waiting func(command string, pid int)) (*Opened, error) {
	clk := clock.Wall{}
	if d.Database != "" {
		// The node's own state (its socket) stays in the directory of db.
		if err := os.MkdirAll(filepath.Dir(d.DB), 0o700); err != nil {
			return nil, fmt.Errorf("create state directory: %w", err)
		}
		pl, err := lockPostgres(ctx, clk, d, holder, node, waiting)
		if err != nil {
			return nil, lockError(err, d)
		}
		ctx, cancel := context.WithTimeout(ctx, dbTimeout)
		defer cancel()
		db, err := postgres.Open(ctx, d.Database, store.WithClock(clk))
		if err != nil {
			pl.Unlock()
			return nil, err
		}
		return &Opened{Store: db, Postgres: db, Lock: pl, Clock: clk}, nil
	}
	var sl *store.DaemonLock
	var err error
	if waiting != nil {
		sl, err = store.LockWait(ctx, d.DB, holder, func(le *store.LockError) { waiting(le.Holder, le.PID) })
	} else {
		sl, err = store.Lock(d.DB, holder)
	}
	if err != nil {
		return nil, err
	}
	db, err := store.Open(d.DB, store.WithClock(clk))
	if err != nil {
		sl.Unlock()
		return nil, err
	}
	return &Opened{Store: db, SQLite: db, Lock: sl, Clock: clk}, nil
}

// lockError says who holds a PostgreSQL database's lock.
func lockError(err error, d *config.Daemon) error {
	if errors.Is(err, engine.ErrLocked) {
		return fmt.Errorf("%w (see docs/cluster.md)", err)
	}
	return err
}

// OpenStore opens the database for reading, without the lock: WAL lets
// the CLI read while the daemon writes, and PostgreSQL serves any number
// of readers.
func OpenStore(d *config.Daemon) (engine.Store, error) {
	if d.Database != "" {
		ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
		defer cancel()
		return postgres.Open(ctx, d.Database)
	}
	if _, err := os.Stat(d.DB); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no database at %s yet: start hookd with `hookd serve` or fire a hook first", d.DB)
	}
	return store.Open(d.DB)
}

// DatabaseName names the database in messages and logs (a URL without
// its password).
func DatabaseName(d *config.Daemon) string {
	if d.Database != "" {
		return postgres.Describe(d.Database)
	}
	return d.DB
}

// whereOf is the database of d as `hookd status` shows it.
func whereOf(d *config.Daemon) api.DBWhere {
	if d.Database != "" {
		return api.DBWhere{Kind: "postgres", Name: postgres.Describe(d.Database)}
	}
	abs, err := filepath.Abs(d.DB)
	if err != nil {
		abs = d.DB
	}
	return api.DBWhere{Kind: "sqlite", Name: abs}
}

// lockWait is how long a daemon waits for a PostgreSQL database's lock
// before it refuses: the server ends the session of a daemon killed a
// moment ago (a restart right after a crash) shortly after the kill.
const lockWait = 3 * time.Second

// lockWaiting takes a lock with take, trying again for up to lockWait
// (on clock's monotonic reading) while another session holds it.
func lockWaiting(ctx context.Context, clk clock.Clock, take func(context.Context) (*postgres.DaemonLock, error)) (*postgres.DaemonLock, error) {
	began := clk.Mono()
	for {
		l, err := take(ctx)
		if err == nil || !errors.Is(err, engine.ErrLocked) || clock.Since(clk, began) > lockWait {
			return l, err
		}
		if sleep(ctx, clk, 100*time.Millisecond) != nil {
			return nil, err // the lock's error, as before the wait
		}
	}
}

// sleep waits d on clock's timer, or until ctx ends (its error then).
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// commandPoll is how often a node waiting for an offline command's
// PostgreSQL lock tries again (a connection each time).
const commandPoll = 250 * time.Millisecond

// lockPostgres takes the PostgreSQL lock of d's database: the node lock
// of node, or with node "" the lock alone for command holder. With
// waiting set, while an offline hookd command holds the database
// (postgres.CommandError) it waits for it, as store.LockWait does for
// SQLite, until ctx ends.
func lockPostgres(ctx context.Context, clk clock.Clock, d *config.Daemon, holder, node string, waiting func(command string, pid int)) (*postgres.DaemonLock, error) {
	lastPID := -1
	for {
		tctx, cancel := context.WithTimeout(ctx, dbTimeout)
		pl, err := lockWaiting(tctx, clk, func(ctx context.Context) (*postgres.DaemonLock, error) {
			if node != "" {
				return postgres.LockNode(ctx, d.Database, node)
			}
			return postgres.Lock(ctx, d.Database, holder)
		})
		cancel()
		var ce *postgres.CommandError
		if err == nil || waiting == nil || !errors.As(err, &ce) || !ce.Transient() {
			return pl, err
		}
		if ce.PID != lastPID {
			lastPID = ce.PID
			waiting(ce.Command, ce.PID)
		}
		if sleep(ctx, clk, commandPoll) != nil {
			return nil, fmt.Errorf("lock database %s: stopped waiting for hookd %s, pid %d: %w",
				postgres.Describe(d.Database), ce.Command, ce.PID, context.Cause(ctx))
		}
	}
}
