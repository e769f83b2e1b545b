package pgtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// notifyHolders makes the holders of the notify lock take turns: each
// sets and resets the server's synchronous_standby_names.
var notifyHolders sync.Mutex

// HoldNotifyLock holds the server's notify lock until release is called
// (or t ends; release is safe to call more than once). PostgreSQL takes
// that lock (an AccessExclusiveLock on "database 0", object 0 of class
// 1262 in pg_locks: one for the whole server) in the commit of every
// transaction that ran NOTIFY or pg_notify, and holds it until the
// commit is durable, so that notifications are queued in commit order
// (src/backend/commands/async.c, PreCommit_Notify). While it is held,
// every such commit in the server waits for it, subject to its session's
// lock_timeout: as under a burst of notifying commits, each of which
// holds it through its flush of the write-ahead log.
//
// It is held by the commit of a notifying transaction that waits for a
// synchronous standby that never comes: the server's
// synchronous_standby_names names one until release, and only the
// holder's transaction asks for synchronous commit (Start runs the
// server with synchronous_commit=off, which every other session keeps).
// release cancels that wait (the commit completes locally) and resets
// the setting.
//
// A test that holds it must not run in parallel with the other tests of
// its binary (no t.Parallel): their notifying commits would wait for it
// too. Holders take turns.
func HoldNotifyLock(t testing.TB) (release func()) {
	t.Helper()
	s := Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	notifyHolders.Lock()
	h := &notifyHold{t: t, s: s, unlock: notifyHolders.Unlock}
	t.Cleanup(h.release)
	if err := h.take(ctx); err != nil {
		h.release()
		t.Fatalf("hold the notify lock: %v", err)
	}
	return h.release
}

// notifyHold is a held notify lock (HoldNotifyLock).
type notifyHold struct {
	t      testing.TB
	s      *Server
	unlock func()
	once   sync.Once

	conn   *pgx.Conn
	commit chan error // the holding commit's result, once it ends; nil when none is under way
}

// take starts the holding commit and returns once it holds the lock.
// A commit may end without waiting, before the server's checkpointer
// has taken the new synchronous_standby_names in: it is made again.
func (h *notifyHold) take(ctx context.Context) error {
	if err := h.s.Exec(ctx, `CREATE TABLE IF NOT EXISTS pgtest_notify_lock (n int)`); err != nil {
		return err
	}
	if err := h.s.Exec(ctx, `ALTER SYSTEM SET synchronous_standby_names = 'pgtest_no_standby'`); err != nil {
		return err
	}
	if err := h.s.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		return err
	}
	var err error
	if h.conn, err = pgx.Connect(ctx, h.s.URL("postgres")); err != nil {
		return err
	}
	for {
		waits, err := h.try(ctx)
		if err != nil || waits {
			return err
		}
	}
}

// try makes one holding commit: waits reports whether it waits for the
// standby, holding the lock; false when it committed without waiting.
func (h *notifyHold) try(ctx context.Context) (waits bool, err error) {
	tx, err := h.conn.Begin(ctx)
	if err != nil {
		return false, err
	}
	// A commit that wrote nothing to the log waits for no standby: the
	// insert is what makes it wait.
	for _, q := range []string{`SET LOCAL synchronous_commit = on`, `INSERT INTO pgtest_notify_lock VALUES (1)`,
		`SELECT pg_notify('pgtest_notify_lock', '')`} {
		if _, err := tx.Exec(ctx, q); err != nil {
			tx.Rollback(ctx)
			return false, err
		}
	}
	commit := make(chan error, 1)
	go func() { commit <- tx.Commit(context.Background()) }()
	for {
		var held bool
		err := h.s.admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.pid = $1 AND l.locktype = 'object' AND l.classid = 'pg_database'::regclass AND l.objid = 0
			AND l.granted AND a.wait_event = 'SyncRep')`, h.conn.PgConn().PID()).Scan(&held)
		if err != nil {
			h.commit = commit // release ends it
			return false, err
		}
		if held {
			h.commit = commit
			return true, nil
		}
		select {
		case err := <-commit:
			return false, err
		case <-ctx.Done():
			h.commit = commit
			return false, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// release ends the holding commit's wait and resets the server's
// setting, once.
func (h *notifyHold) release() {
	h.once.Do(func() {
		defer h.unlock()
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		var errs []error
		if h.conn != nil {
			if h.commit != nil {
				errs = append(errs, h.s.Exec(ctx, fmt.Sprintf(`SELECT pg_cancel_backend(%d)`, h.conn.PgConn().PID())))
				select {
				case <-h.commit: // cancelled, its wait ends with a warning: committed locally
				case <-ctx.Done():
					errs = append(errs, errors.New("the holding commit did not end"))
				}
			}
			h.conn.Close(ctx)
		}
		errs = append(errs, h.s.Exec(ctx, `ALTER SYSTEM RESET synchronous_standby_names`), h.s.Exec(ctx, `SELECT pg_reload_conf()`))
		if err := errors.Join(errs...); err != nil {
			h.t.Errorf("pgtest: let the notify lock go: %v", err)
		}
	})
}
