package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/pgurl"
	"github.com/hookd/hookd/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ engine.Store = (*DB)(nil)

// DB is the PostgreSQL store. It is safe for concurrent use, and several
// processes may use one database at once.
type DB struct {
	pool *pgxpool.Pool
	desc string // the URL without its password, for messages

	closeOnce sync.Once
	obs       store.Observer // told of event writes (Observe)
	clock     clock.Clock    // store.Options.Clock
}

// Open connects to the database at url (postgres://user@host/db?...) and
// brings its schema up to date. It refuses a database written by a newer
// hookd. It takes the options of SQLite's store.Open.
func Open(ctx context.Context, url string, opts ...store.Option) (*DB, error) {
	o := store.Configure(opts)
	if err := pgurl.Check(url); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", parseError(err))
	}
	d := &DB{desc: Describe(url), clock: o.Clock}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	if d.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("open store %s: %w", d.desc, err)
	}
	if err := d.pool.Ping(ctx); err != nil {
		d.pool.Close()
		return nil, fmt.Errorf("open store %s: %w", d.desc, err)
	}
	if err := migrate(ctx, d.pool, migrations, d.clock); err != nil {
		d.pool.Close()
		return nil, fmt.Errorf("open store %s: %w", d.desc, err)
	}
	return d, nil
}

// Describe returns url with its password masked, for messages and logs
// (pgurl.Describe): a URL that does not parse is not shown.
func Describe(url string) string { return pgurl.Describe(url) }

// connConfig parses url for one connection. Its error never quotes the
// URL: pgurl.Check refuses what pgx would misread, and what pgx refuses
// after that is said without the URL.
func connConfig(url string) (*pgx.ConnConfig, error) {
	if err := pgurl.Check(url); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, parseError(err)
	}
	return cfg, nil
}

// parseError is pgx's refusal of a URL pgurl.Check accepted (an unknown
// sslmode, a port out of range...), as a *pgurl.Error: the reason pgx
// gives, without the URL it quotes (which it masks on a best-effort
// basis only). The URL holds no space (Check refuses one), so the first
// "`: " ends pgx's quote.
func parseError(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		if _, reason, ok := strings.Cut(pe.Error(), "`: "); ok {
			return &pgurl.Error{Reason: reason}
		}
	}
	return &pgurl.Error{Reason: "pgx does not accept it"}
}

// String names the database (without its password).
func (d *DB) String() string { return d.desc }

// Close closes the connections. It is safe to call more than once.
func (d *DB) Close() error {
	d.closeOnce.Do(d.pool.Close)
	return nil
}

// tx runs fn in a transaction and commits it when fn returns nil. When
// ctx carries a scheduler's hold on the lease (Member.Fence), the
// transaction checks, after fn and just before it commits, that the lease
// is still that one, holding its row until the commit (fence), and fails
// wrapping engine.ErrLeaseLost when it is not. The check comes last so
// that the row is held for a moment, not while fn waits for a lock: a
// scheduler whose writes wait on a stalled table would otherwise keep
// its own renewal from the row (PostgreSQL lets share lockers in ahead
// of an update waiting for them) until the lease ran out.
func (d *DB) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	h, isFenced := ctx.Value(fenceKey{}).(fenceHold)
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if isFenced {
			if err := fence(ctx, tx, h.lease, h.bound); err != nil {
				return fenceErr(err)
			}
			if f, ok := ctx.Value(beforeCommitKey{}).(func()); ok {
				f()
			}
		}
		return nil
	})
}

// fenceErr is the error of a failed fence: engine.ErrLeaseLost when the
// lease is not the one held, else the database's error as it is (a lock
// wait that ran out, a connection lost): the write may be made again,
// and the holder is not told it lost the lease.
func fenceErr(err error) error {
	if errors.Is(err, ErrLeaseLost) {
		return fmt.Errorf("%w: %w", engine.ErrLeaseLost, err)
	}
	return err
}

// beforeCommitKey is the context key of a test's func called by a fenced
// transaction between its fence and its commit: where a process killed
// with its commit under way, or a client that stopped, leaves it.
type beforeCommitKey struct{}

// DaemonLock is the lock that lets one daemon at a time use a database:
// a session advisory lock, held by a connection of its own for as long
// as the lock is held. PostgreSQL releases it when that connection ends,
// so a daemon killed with SIGKILL does not leave it behind.
type DaemonLock struct {
	conn *pgx.Conn
	once sync.Once
	err  error
}

// Lock takes the daemon lock of the database at url alone (an offline
// command), or fails with an error wrapping engine.ErrLocked when another
// process holds it. command, the hookd command taking it ("fire",
// "emit", ...; "" for none), names the lock's session (its
// application_name, "hookd fire pid 1234"), so that a node that finds the
// database held can say by what, and wait for it (CommandError).
func Lock(ctx context.Context, url, command string) (*DaemonLock, error) {
	cfg, err := connConfig(url)
	if err != nil {
		return nil, fmt.Errorf("lock database: %w", err)
	}
	if command != "" {
		cfg.RuntimeParams["application_name"] = fmt.Sprintf("hookd %s pid %d", command, os.Getpid())
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("lock database %s: %w", Describe(url), err)
	}
	for try := 1; ; try++ {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, lockDaemon).Scan(&ok); err != nil {
			conn.Close(ctx)
			return nil, fmt.Errorf("lock database %s: %w", Describe(url), err)
		}
		if ok {
			return &DaemonLock{conn: conn}, nil
		}
		// Held alone by an offline command (which ends by itself), or
		// shared by the nodes of a cluster.
		command, pid, held := lockCommand(ctx, conn)
		if !held && try < lockTries {
			continue // its holder let go between the try and the look
		}
		conn.Close(ctx)
		if command != "" {
			return nil, &CommandError{Database: Describe(url), Command: command, PID: pid}
		}
		return nil, fmt.Errorf("lock database %s: %w", Describe(url), engine.ErrLocked)
	}
}

// lockTries is how many times Lock and LockNode try the daemon lock
// when its holder is gone by the time they look for it (it let go in
// between): the next try takes it.
const lockTries = 3

// afterRefused, when set (by tests), runs between a refused try of the
// daemon lock and the look for its holder: the window in which the
// holder may let go.
var afterRefused func()

// Check reports whether the lock is still held: its connection must be
// alive (a database restart ends the session, and with it the lock).
func (l *DaemonLock) Check() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.conn.Ping(ctx); err != nil {
		return fmt.Errorf("check database lock: the session holding it is gone: %w", err)
	}
	return nil
}

// Unlock releases the lock, then ends its session. It is safe to call
// more than once; later calls return the result of the first.
func (l *DaemonLock) Unlock() error {
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The server frees a session's locks when its backend exits, a
		// moment after the connection closes: a Lock right after Unlock
		// would find the lock held. Released here, it is free at once. A
		// session already gone (the error) holds nothing.
		_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
		if err := l.conn.Close(ctx); err != nil {
			l.err = fmt.Errorf("unlock database: %w", err)
		}
	})
	return l.err
}

// errNoRows reports whether err is pgx's "no rows".
func errNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// defaultLimit is the number of rows a list returns when no limit is given.
const defaultLimit = 50

// Times are BIGINT unix nanoseconds: NULL (nullable columns) or 0 for the
// zero time; everything reads back in UTC.

func timeArg(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func timeInt(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func intTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

func nullTime(ns *int64) time.Time {
	if ns == nil {
		return time.Time{}
	}
	return intTime(*ns)
}

// CommandError says that an offline hookd command (fire, emit, pause,
// ... run with no daemon answering) holds a database's daemon lock alone,
// so no node can start, nor another offline command. It wraps
// engine.ErrLocked.
type CommandError struct {
	Node     string // the node refused; "" for an offline command refused (Lock)
	Database string // the database, without its password
	// Command and PID name the holder, as its session's application_name
	// records them (Lock); "" and 0 when unknown: an older hookd names
	// no session.
	Command string
	PID     int
}

func (e *CommandError) Error() string {
	who := "an offline hookd command"
	if e.Command != "" {
		who += " (" + e.Who() + ")"
	}
	if e.Node == "" {
		return fmt.Sprintf("lock database %s: %s holds it: %v", e.Database, who, engine.ErrLocked)
	}
	return fmt.Sprintf("lock node %s on %s: %s holds the database: %v", e.Node, e.Database, who, engine.ErrLocked)
}

// Who names the holder: "hookd fire, pid 1234"; "" when unknown.
func (e *CommandError) Who() string {
	if e.Command == "" {
		return ""
	}
	return fmt.Sprintf("hookd %s, pid %d", e.Command, e.PID)
}

// Unwrap returns engine.ErrLocked.
func (e *CommandError) Unwrap() error { return engine.ErrLocked }

// Transient reports whether the holder is known to be a hookd command,
// which ends by itself: a node that starts may wait for it.
func (e *CommandError) Transient() bool { return e.Command != "" }

// lockCommand returns the command and pid holding the daemon lock alone,
// as its session's application_name records them; "" and 0 when unknown.
// held is false when no session holds it alone any more: it let go since
// the lock was refused.
func lockCommand(ctx context.Context, conn *pgx.Conn) (command string, pid int, held bool) {
	if afterRefused != nil {
		afterRefused()
	}
	var app string
	err := conn.QueryRow(ctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND l.classid = ($1::bigint >> 32)::oid AND l.objid = ($1::bigint & 4294967295)::oid AND l.objsubid = 1
		AND l.mode = 'ExclusiveLock' AND l.granted LIMIT 1`, lockDaemon).Scan(&app)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, false
	}
	if err != nil {
		return "", 0, true
	}
	f := strings.Fields(app)
	if len(f) != 4 || f[0] != "hookd" || f[2] != "pid" || !store.CommandName(f[1]) {
		return "", 0, true
	}
	pid, err = strconv.Atoi(f[3])
	if err != nil || pid <= 0 {
		return "", 0, true
	}
	return f[1], pid, true
}
