package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/jackc/pgx/v5"
)

// The engine's side of a cluster (engine.Cluster) on this database: a
// Member is one hookd process taking part as a node.

// sqlReleased is migration 3: a queued run is claimable by the nodes once
// the scheduler released it; until then it waits in the scheduler's queue
// (a concurrency slot, or a pending rerun of its hook). Written to apply
// again harmlessly (a test re-runs the migrations after an earlier one).
const sqlReleased = `
ALTER TABLE runs ADD COLUMN IF NOT EXISTS claimable BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS runs_claimable ON runs (seq) WHERE status = 'queued' AND claimable;
`

// sqlPrevStart is migration 8: the previous start of a run's hook as the
// scheduler knew it when it released the run, for the node that executes
// it ({{last_run_time}}).
const sqlPrevStart = `ALTER TABLE runs ADD COLUMN IF NOT EXISTS prev_start BIGINT;`

// Channels a Member notifies and listens on, besides ChannelWork.
const (
	ChannelDone   = "hookd_done"   // a run's record is final (payload: its id)
	ChannelEvents = "hookd_events" // events were stored
	ChannelCancel = "hookd_cancel" // cancel a run (payload: the engine's request)
)

var wakeChannels = map[engine.Wake]string{
	engine.WakeWork: ChannelWork, engine.WakeDone: ChannelDone,
	engine.WakeEvents: ChannelEvents, engine.WakeCancel: ChannelCancel,
}

// Member is a node of the cluster: its name, its capacity and its hold
// on the scheduler lease. Create it with DB.Member.
type Member struct {
	db       *DB
	name     string
	holder   string // name/instance: each process holds the lease under its own
	capacity int
	timeout  time.Duration

	mu       sync.Mutex
	lease    Lease
	held     bool
	versions map[string]string // the hooks this node loaded, name to version (nil: none reported yet)
}

var _ engine.Cluster = (*Member)(nil)

// Member returns this process as the node name, executing up to capacity
// runs at once, whose heartbeats and lease last timeout. The caller must
// hold name's node lock (LockNode): a Member takes over the lease a dead
// process of its own name held without waiting for it to expire.
func (d *DB) Member(name string, capacity int, timeout time.Duration) *Member {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &Member{db: d, name: name, holder: name + "/" + hex.EncodeToString(b), capacity: capacity, timeout: timeout}
}

func (m *Member) Node() string            { return m.name }
func (m *Member) Capacity() int           { return m.capacity }
func (m *Member) Timeout() time.Duration  { return m.timeout }
func (m *Member) Interval() time.Duration { return m.timeout / 5 }

// nodeLocked is SQL that is true while the node named by the text
// expression holds its node lock (LockNode): the session of its live
// process does. pg_locks shows the two int4 keys of an advisory lock as
// classid and objid, with objsubid 2.
func nodeLocked(node string) string {
	return `EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = hashtext('hookd node')::oid AND objid = hashtext(` + node + `)::oid)`
}

// Lead takes or renews the scheduler lease for Timeout. A lease held by
// an earlier process of this node's name is taken over at once (with a
// new token): that process is gone, since this one holds the node lock.
// So is the lease of a holder whose node lock is gone (its process died
// and its session with it), provided this node's own lock shows: where
// it does not (a pooler in transaction mode hides session locks), the
// lease changes hands only when it runs out.
//
// Lead is one transaction, bounded by the server (leadBound), so that a
// Lead its client gave up on does not take or renew the lease a moment
// later. A statement whose context ends is not reliably ended in the
// server: pgx closes the connection and sends a cancel request, from
// another goroutine and over a connection of its own, which may come
// late or not at all (the server notices the closed connection only when
// it next reads from it). A lone UPDATE waiting for the lease's row
// (another transaction held it) so could wait on after its client had
// gone, and commit once it had the row: the holder, told its renewal failed, took the lease for
// lost while the row named it (TestLeadGivenUpCommitsNothing). In a
// transaction, the server reads the connection before it commits, and
// finds it closed; it ends the transaction besides once it waited
// leadBound (statement_timeout) or sat that long idle in it (its client
// stopped, with the row held, as a fenced transaction's may). Only a
// commit whose answer does not reach the client in time still lands
// unseen: Remaining tells (lease.Keeper).
func (m *Member) Lead(ctx context.Context) (string, bool, error) {
	var (
		l      = Lease{Name: SchedulerLease}
		holder string
		took   bool
	)
	err := pgx.BeginFunc(ctx, m.db.pool, func(tx pgx.Tx) error {
		ms := fmt.Sprintf("%dms", max(leadBound(ctx, m.Interval()).Milliseconds(), 1))
		if _, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true),
			set_config('idle_in_transaction_session_timeout', $1, true)`, ms); err != nil {
			return fmt.Errorf("bound it: %w", err)
		}
		err := tx.QueryRow(ctx, `INSERT INTO leases (name, holder, token, expires_at)
			VALUES ($1, $2, 1, now() + $3 * interval '1 microsecond')
			ON CONFLICT (name) DO UPDATE SET
				token = CASE WHEN leases.holder = excluded.holder THEN leases.token ELSE leases.token + 1 END,
				holder = excluded.holder,
				expires_at = excluded.expires_at
			WHERE leases.holder = excluded.holder OR leases.expires_at < now()
				OR split_part(leases.holder, '/', 1) = $4
				OR `+nodeLocked("$4")+` AND NOT `+nodeLocked("split_part(leases.holder, '/', 1)")+`
			RETURNING holder, token, expires_at`, l.Name, m.holder, m.timeout.Microseconds(), m.name).
			Scan(&l.Holder, &l.Token, &l.Expires)
		if errNoRows(err) {
			if err := tx.QueryRow(ctx, `SELECT holder FROM leases WHERE name = $1`, l.Name).Scan(&holder); err != nil {
				return fmt.Errorf("read it: %w", err)
			}
			return nil
		}
		took = err == nil
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("take the scheduler lease: %w", err)
	}
	if !took {
		m.setLease(Lease{}, false)
		return holderNode(holder), false, nil
	}
	m.setLease(l, true)
	return m.name, true, nil
}

// leadBound is how long the server lets a Lead wait, within ctx's
// deadline: two heartbeat intervals, longer than a fenced transaction
// holds the lease's row at most (fence), so that a renewal outwaits one;
// and at most half of what is left until the deadline, so that the
// server ends a Lead that waits before its client gives up on it.
func leadBound(ctx context.Context, interval time.Duration) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return min(2*interval, time.Until(deadline)/2)
	}
	return 2 * interval
}

// Remaining reads the scheduler lease: how long this process's hold on
// it lasts from now, on the database's clock, or zero when it ran out,
// another holder took it, or this process does not hold it. Unlike
// Lead, it takes no lock, so no transaction holding the lease's row
// delays it.
func (m *Member) Remaining(ctx context.Context) (time.Duration, error) {
	l, held := m.current()
	if !held {
		return 0, nil
	}
	var micros int64
	err := m.db.pool.QueryRow(ctx, `SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1e6)::bigint
		FROM leases WHERE name = $1 AND holder = $2 AND token = $3`, l.Name, l.Holder, l.Token).Scan(&micros)
	if errNoRows(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the scheduler lease: %w", err)
	}
	return max(time.Duration(micros)*time.Microsecond, 0), nil
}

// Vacant reports whether Lead would take the scheduler lease now: it ran
// out, or its holder's process is gone (its node lock is free, and this
// node's own shows; see Lead). It is false while this node holds it, and
// true when no node ever took it.
func (m *Member) Vacant(ctx context.Context) (bool, error) {
	if _, held := m.current(); held {
		return false, nil
	}
	var vacant bool
	err := m.db.pool.QueryRow(ctx, `SELECT expires_at < now() OR split_part(holder, '/', 1) = $2
			OR `+nodeLocked("$2")+` AND NOT `+nodeLocked("split_part(holder, '/', 1)")+`
		FROM leases WHERE name = $1`, SchedulerLease, m.name).Scan(&vacant)
	if errNoRows(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("look at the scheduler lease's holder: %w", err)
	}
	return vacant, nil
}

// fenceKey is the context key of the lease a write is fenced by (Fence),
// a fenceHold.
type fenceKey struct{}

// fenceHold is the lease a write is fenced by, and the bound on how long
// its transaction may hold the lease's row (fence).
type fenceHold struct {
	lease Lease
	bound time.Duration
}

// Fence returns ctx carrying this process's hold on the scheduler lease
// as it is now. A write of the store made with it (InsertRun, FinishRun,
// UpdateQueued, MarkDispatched, MergeFire: each a transaction of DB.tx)
// checks in its transaction that this process still holds the lease with
// the same token, as Release does, and fails wrapping engine.ErrLeaseLost
// when it does not. The check is the write's last statement and holds
// the lease's row until the write commits: a node taking the lease over
// waits for that commit, so a scheduler's record lands before its
// successor reads the state it changes, or not at all (a scheduler killed
// with its commit under way, or one that lost the lease without noticing
// yet). Without the lease, no fenced write passes.
func (m *Member) Fence(ctx context.Context) context.Context {
	l, held := m.current()
	if !held {
		l = Lease{Name: SchedulerLease, Holder: m.holder} // token 0: no lease has it
	}
	return m.fenced(ctx, l)
}

// fenced returns ctx carrying l, for DB.tx to fence its transaction by,
// bound by a heartbeat interval.
func (m *Member) fenced(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, fenceKey{}, fenceHold{lease: l, bound: m.Interval()})
}

func (m *Member) setLease(l Lease, held bool) {
	m.mu.Lock()
	m.lease, m.held = l, held
	m.mu.Unlock()
}

func (m *Member) current() (Lease, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease, m.held
}

// holderNode is the node name of a lease holder (name/instance).
func holderNode(holder string) string {
	for i := 0; i < len(holder); i++ {
		if holder[i] == '/' {
			return holder[:i]
		}
	}
	return holder
}

// Resign gives the lease up if this process holds it.
func (m *Member) Resign(ctx context.Context) error {
	l, held := m.current()
	if !held {
		return nil
	}
	m.setLease(Lease{}, false)
	return m.db.ReleaseLease(ctx, l)
}

// Release records r as queued and claimable, fenced by the lease (see
// engine.Cluster), then wakes the nodes (NOTIFY ChannelWork, after the
// commit: wake).
func (m *Member) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	l, held := m.current()
	if !held {
		return fmt.Errorf("release run %s: %w", r.ID, engine.ErrLeaseLost)
	}
	args, err := store.RunArgs(r, engine.StatusQueued)
	if err != nil {
		return fmt.Errorf("release run %s: %w", r.ID, err)
	}
	err = m.db.tx(m.fenced(ctx, l), func(tx pgx.Tx) error {
		if !r.Slot.IsZero() {
			if err := slotFree(ctx, tx, r.Hook, r.Slot, r.ID); err != nil {
				return err
			}
		}
		// New, or the queued record of a run that waited.
		tag, err := tx.Exec(ctx, sqlInsertRun+` ON CONFLICT (id) DO UPDATE SET
				"trigger" = excluded."trigger", slot = coalesce(excluded.slot, runs.slot), reason = excluded.reason,
				event_type = excluded.event_type, event = excluded.event, depth = excluded.depth, outcome = excluded.outcome
			WHERE runs.status = 'queued'`, args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("run is no longer queued: %w", engine.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, `UPDATE runs SET claimable = true, prev_start = $2 WHERE id = $1`,
			r.ID, timeArg(r.PrevStart)); err != nil {
			return err
		}
		if err := claimSlot(ctx, tx, r.Hook, r.Slot, r.ID); err != nil {
			return err
		}
		// An event marked dispatched here needs no record of the hooks
		// it reached: the mark drops them.
		if r.EventSeq != markSeq {
			if err := reached(ctx, tx, r.EventSeq, r.Hook, r.ID); err != nil {
				return err
			}
		}
		if markSeq != 0 {
			return markIn(ctx, tx, markSeq)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("release run %s: %w", r.ID, err)
	}
	m.db.wake(ctx, m.Interval(), ChannelWork, r.Hook)
	return nil
}

// Released reports whether run id is released to the nodes: its record
// is queued and claimable, running or final (see engine.Cluster). It
// first waits for the fenced transactions under way to end: each holds
// the lease's row (FOR SHARE) from its fence, its last statement, to its
// commit, so a release whose commit was under way when its caller gave
// up has committed or rolled back before the run's record is read. One
// that had not reached its fence cannot commit any more: its client sent
// no COMMIT, and closed its connection.
func (m *Member) Released(ctx context.Context, id string) (bool, error) {
	l, _ := m.current()
	var released bool
	err := pgx.BeginFunc(ctx, m.db.pool, func(tx pgx.Tx) error {
		if l.Name != "" {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM leases WHERE name = $1 FOR NO KEY UPDATE`, l.Name); err != nil {
				return err
			}
		}
		err := tx.QueryRow(ctx, `SELECT status <> 'queued' OR claimable FROM runs WHERE id = $1`, id).Scan(&released)
		if errNoRows(err) {
			released, err = false, nil
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("read whether run %s is released: %w", id, err)
	}
	return released, nil
}

// InFlight returns the runs released to the nodes and not final, oldest
// first.
func (m *Member) InFlight(ctx context.Context) ([]*engine.Run, error) {
	runs, err := m.db.queryRuns(ctx, `SELECT `+runCols+`, seq FROM runs
		WHERE status = 'running' OR (status = 'queued' AND claimable) ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("list runs in flight: %w", err)
	}
	return runs, nil
}

// Waiting returns the queued runs the scheduler has not released, oldest
// first.
func (m *Member) Waiting(ctx context.Context) ([]*engine.Run, error) {
	runs, err := m.db.queryRuns(ctx, `SELECT `+runCols+`, seq FROM runs
		WHERE status = 'queued' AND NOT claimable ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("list waiting runs: %w", err)
	}
	return runs, nil
}

// Final returns the runs among ids whose record is final.
func (m *Member) Final(ctx context.Context, ids []string) ([]*engine.Run, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	runs, err := m.db.queryRuns(ctx, `SELECT `+runCols+`, seq FROM runs
		WHERE id = ANY($1) AND status NOT IN ('queued', 'running') ORDER BY seq`, ids)
	if err != nil {
		return nil, fmt.Errorf("read finished runs: %w", err)
	}
	return runs, nil
}

func (m *Member) Expire(ctx context.Context, now time.Time) ([]*engine.Run, error) {
	return m.db.ExpireNodes(ctx, m.timeout, now)
}

// Nodes lists the nodes sharing the database, alive by this node's
// timeout: the one Expire declares silent nodes' runs interrupted by.
func (m *Member) Nodes(ctx context.Context) ([]Node, error) {
	return m.db.Nodes(ctx, m.timeout)
}

func (m *Member) Heartbeat(ctx context.Context) error {
	return m.db.Heartbeat(ctx, m.name, m.capacity, "")
}

func (m *Member) Recover(ctx context.Context, now time.Time) ([]*engine.Run, error) {
	return m.db.RecoverNode(ctx, m.name, now)
}

// Loaded reports the node's hooks and their versions (hookversions.go);
// Claim then claims only their runs at those versions.
func (m *Member) Loaded(ctx context.Context, hooks []*engine.Hook) error {
	v := make(map[string]string, len(hooks))
	for _, h := range hooks {
		v[h.Name] = h.Source.Version
	}
	if err := m.db.ReportHookVersions(ctx, m.name, v); err != nil {
		return err
	}
	m.mu.Lock()
	m.versions = v
	m.mu.Unlock()
	return nil
}

// Claim claims released runs of the hooks this node loaded, at the
// versions it loaded.
func (m *Member) Claim(ctx context.Context, n int) ([]*engine.Run, error) {
	m.mu.Lock()
	v := m.versions
	m.mu.Unlock()
	return m.db.ClaimRunsVersions(ctx, m.name, n, v)
}

func (m *Member) FinishOn(ctx context.Context, r *engine.Run) error {
	return m.db.FinishRunOn(ctx, m.name, r)
}

// Notify sends w to every node listening (delivered when it commits).
func (m *Member) Notify(ctx context.Context, w engine.Wake, payload string) error {
	if _, err := m.db.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, wakeChannels[w], payload); err != nil {
		return fmt.Errorf("notify %s: %w", wakeChannels[w], err)
	}
	return nil
}

// Wakes listens on every channel of the cluster on a connection of its
// own, connecting again after a second when the connection is lost, until
// ctx ends.
func (m *Member) Wakes(ctx context.Context) <-chan engine.WakeUp {
	out := make(chan engine.WakeUp, 64)
	byName := make(map[string]engine.Wake, len(wakeChannels))
	for w, ch := range wakeChannels {
		byName[ch] = w
	}
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			err := m.listen(ctx, byName, out)
			if ctx.Err() != nil {
				return
			}
			_ = err // the engine polls meanwhile
			t := m.db.clock.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
	}()
	return out
}

func (m *Member) listen(ctx context.Context, byName map[string]engine.Wake, out chan<- engine.WakeUp) error {
	conn, err := m.db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	for ch := range byName {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			conn.Release()
			return err
		}
	}
	c := conn.Hijack() // a LISTENing connection never goes back to the pool
	defer c.Close(context.Background())
	// Whatever was notified before LISTEN took effect is read from the
	// tables by the engine's first poll.
	out <- engine.WakeUp{Wake: engine.WakeWork}
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		w := engine.WakeUp{Wake: byName[n.Channel], Payload: n.Payload}
		select {
		case out <- w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// LockNode takes the lock of node name on the database at url: the
// daemon lock shared (so an offline command, which takes it alone, waits
// for every node to stop) and the node's own lock alone, so two live
// processes never share a node name. Both are session locks of one
// connection, released when it ends (a killed process's too).
func LockNode(ctx context.Context, url, name string) (*DaemonLock, error) {
	cfg, err := connConfig(url)
	if err != nil {
		return nil, fmt.Errorf("lock node %s: %w", name, err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("lock node %s on %s: %w", name, Describe(url), err)
	}
	var shared, own bool
	for try := 1; ; try++ {
		err = conn.QueryRow(ctx, `SELECT pg_try_advisory_lock_shared($1)`, lockDaemon).Scan(&shared)
		if err != nil || shared {
			break
		}
		command, pid, held := lockCommand(ctx, conn)
		if !held && try < lockTries {
			continue // the offline command let go between the try and the look
		}
		conn.Close(ctx)
		return nil, &CommandError{Node: name, Database: Describe(url), Command: command, PID: pid}
	}
	if err == nil {
		err = conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext('hookd node'), hashtext($1))`, name).Scan(&own)
	}
	switch {
	case err != nil:
		conn.Close(ctx)
		return nil, fmt.Errorf("lock node %s on %s: %w", name, Describe(url), err)
	case !own:
		conn.Close(ctx)
		return nil, fmt.Errorf("lock node %s on %s: %w: a live hookd runs as node %s; give each node its own node.name",
			name, Describe(url), engine.ErrLocked, name)
	}
	return &DaemonLock{conn: conn}, nil
}
