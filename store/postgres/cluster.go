package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/jackc/pgx/v5"
)

// The cluster's building blocks: the nodes that share the database, the
// scheduler lease with its fencing token, the run queue that nodes claim
// from with FOR UPDATE SKIP LOCKED, heartbeats that let a dead node's runs
// be declared interrupted, and LISTEN/NOTIFY wake-ups. Every time here is
// the database server's clock (now()), never a node's, so clock skew
// between nodes does not move a lease or a heartbeat timeout.

// sqlCluster is migration 2.
const sqlCluster = `
CREATE TABLE nodes (
	name           TEXT        PRIMARY KEY,
	started_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
	heartbeat_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
	max_concurrent INTEGER     NOT NULL DEFAULT 0,
	hooks_version  TEXT        NOT NULL DEFAULT ''
);

CREATE TABLE leases (
	name       TEXT        PRIMARY KEY,
	holder     TEXT        NOT NULL,
	token      BIGINT      NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL
);

ALTER TABLE runs ADD COLUMN node TEXT;
CREATE INDEX runs_node_running ON runs (node) WHERE status = 'running';
`

// SchedulerLease is the name of the lease whose holder schedules.
const SchedulerLease = "scheduler"

// ChannelWork is the LISTEN/NOTIFY channel told when runs are queued.
const ChannelWork = "hookd_work"

// ErrLeaseLost is returned by a fenced write whose token is no longer
// the lease's: another node took the lease over, or it expired.
var ErrLeaseLost = errors.New("postgres: lease lost")

// Lease is a held lease: Token grows by one each time the lease changes
// holder, so a write fenced with an older token is refused.
type Lease struct {
	Name    string
	Holder  string
	Token   int64
	Expires time.Time // on the database's clock
}

// AcquireLease takes the lease name for holder for ttl, or renews it when
// holder holds it already (same token). It returns ok false, and the
// current holder, when another holder's lease has not expired. A lease
// changing hands gets the next token.
func (d *DB) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (l Lease, ok bool, err error) {
	l.Name = name
	err = d.pool.QueryRow(ctx, `INSERT INTO leases (name, holder, token, expires_at)
		VALUES ($1, $2, 1, now() + $3 * interval '1 microsecond')
		ON CONFLICT (name) DO UPDATE SET
			token = CASE WHEN leases.holder = excluded.holder THEN leases.token ELSE leases.token + 1 END,
			holder = excluded.holder,
			expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at < now()
		RETURNING holder, token, expires_at`, name, holder, ttl.Microseconds()).Scan(&l.Holder, &l.Token, &l.Expires)
	if errNoRows(err) {
		err = d.pool.QueryRow(ctx, `SELECT holder, token, expires_at FROM leases WHERE name = $1`, name).
			Scan(&l.Holder, &l.Token, &l.Expires)
		if err != nil {
			return l, false, fmt.Errorf("read lease %s: %w", name, err)
		}
		return l, false, nil
	}
	if err != nil {
		return l, false, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return l, true, nil
}

// ReleaseLease gives up a lease held with token, so another node may take
// it at once instead of after it expires.
func (d *DB) ReleaseLease(ctx context.Context, l Lease) error {
	if _, err := d.pool.Exec(ctx, `UPDATE leases SET expires_at = now() - interval '1 microsecond'
		WHERE name = $1 AND holder = $2 AND token = $3`, l.Name, l.Holder, l.Token); err != nil {
		return fmt.Errorf("release lease %s: %w", l.Name, err)
	}
	return nil
}

// fence checks, in tx, that l is still the lease (same holder and token,
// not expired) and holds its row locked until tx ends, so that no other
// node can take the lease over between the check and the commit. It is
// the last statement of tx (DB.tx).
//
// While tx holds the row, the holder cannot renew the lease and no node
// can take it over: a fenced transaction whose client stopped, froze or
// was cut off between the check and the commit (TCP would tell the server
// hours later) would stall scheduling on every node. With bound above
// zero (the holder's heartbeat interval: Member.Interval), the server
// ends tx once the check waits that long for the row, or its session
// once it sits that long idle in tx, letting the row go; the write fails
// and is made again, or left to the next scheduler. The lock_timeout
// also bounds every lock the commit waits for: tx must take none there
// (it must not notify: wake).
func fence(ctx context.Context, tx pgx.Tx, l Lease, bound time.Duration) error {
	if bound > 0 {
		ms := fmt.Sprintf("%dms", max(bound.Milliseconds(), 1))
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true),
			set_config('idle_in_transaction_session_timeout', $1, true)`, ms); err != nil {
			return fmt.Errorf("bound the fenced transaction: %w", err)
		}
	}
	var ok bool
	err := tx.QueryRow(ctx, `SELECT expires_at > clock_timestamp() FROM leases
		WHERE name = $1 AND holder = $2 AND token = $3 FOR SHARE`, l.Name, l.Holder, l.Token).Scan(&ok)
	if errNoRows(err) || err == nil && !ok {
		return fmt.Errorf("lease %s token %d of %s: %w", l.Name, l.Token, l.Holder, ErrLeaseLost)
	}
	return err
}

// wake notifies channel with payload, in a statement of its own: for a
// fenced write, after its commit. A fenced transaction must not notify.
// PostgreSQL's commit of a transaction that notified takes the server's
// notify lock (one for every database: AccessExclusiveLock on object 0
// of class pg_database), which each such commit holds until it is
// durable, so a burst of notifying commits queues on it. The fence's
// lock_timeout (fence) applies to that wait too, and statement_timeout
// does not (the server disarms it before it commits): a fenced commit
// waited for the lock with the lease's row held, and failed once the
// bound ran out ("canceling statement due to lock timeout"), leaving a
// run unreleased (TestFencedWriteNotifyLock). A notification is a
// wake-up and nothing more: the nodes and the scheduler poll each
// heartbeat interval as well, so one that fails, or is lost with a
// process killed between the commit and it, costs at most an interval.
// Its error is not returned: the write it follows is made.
//
// Its own commit takes the notify lock as well, so it waits for at most
// bound (about a heartbeat interval: what a lost wake-up costs anyway),
// whatever ctx allows: a release would otherwise return only when the
// lock came or its StoreTimeout ran out, a fire's answer (DecideFires,
// under the dispatch loop's context, which has no deadline) not before
// the lock came, the write being made all the while. Given up, the
// notification may be sent late, once the lock comes, or not at all.
func (d *DB) wake(ctx context.Context, bound time.Duration, channel, payload string) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	_, _ = d.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload)
}

// enqueueWake bounds EnqueueFenced's wake-up, which has no member's
// heartbeat interval to go by.
const enqueueWake = time.Second

// EnqueueFenced records a queued run for the lease holder: the lease is
// checked in the same transaction as the run and its slot claim, so a
// scheduler that lost the lease cannot fire another slot. Waiting nodes
// are woken after the commit (NOTIFY ChannelWork: wake).
func (d *DB) EnqueueFenced(ctx context.Context, l Lease, r *engine.Run) error {
	if r.Status != engine.StatusQueued {
		return fmt.Errorf("enqueue run %s: status %q, want queued", r.ID, r.Status)
	}
	args, err := store.RunArgs(r, r.Status)
	if err != nil {
		return fmt.Errorf("enqueue run %s: %w", r.ID, err)
	}
	err = d.tx(ctx, func(tx pgx.Tx) error {
		if err := fence(ctx, tx, l, 0); err != nil {
			return err
		}
		if !r.Slot.IsZero() {
			if err := slotFree(ctx, tx, r.Hook, r.Slot, r.ID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, sqlInsertRun, args...); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE runs SET claimable = true WHERE id = $1`, r.ID); err != nil {
			return err
		}
		if !r.Slot.IsZero() {
			tag, err := tx.Exec(ctx, `INSERT INTO slots (hook, slot, run_id) VALUES ($1, $2, $3)
				ON CONFLICT (hook, slot) DO NOTHING`, r.Hook, timeInt(r.Slot), r.ID)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return slotFree(ctx, tx, r.Hook, r.Slot, r.ID)
			}
			if err := claimSlot(ctx, tx, r.Hook, r.Slot, r.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("enqueue run %s: %w", r.ID, err)
	}
	d.wake(ctx, enqueueWake, ChannelWork, r.Hook)
	return nil
}

// ClaimRuns starts up to n queued runs the scheduler released (claimable,
// member.go) on node, oldest first, and returns them running. Queued rows
// other nodes are claiming at the same moment are skipped (FOR UPDATE
// SKIP LOCKED), so nodes claim in parallel and each run is claimed once.
func (d *DB) ClaimRuns(ctx context.Context, node string, n int) ([]*engine.Run, error) {
	return d.claimRuns(ctx, node, n, nil)
}

// claimRuns is ClaimRuns, of the runs of the hooks in versions only (all
// when versions is nil): see ClaimRunsVersions.
func (d *DB) claimRuns(ctx context.Context, node string, n int, versions map[string]string) ([]*engine.Run, error) {
	if n <= 0 {
		return nil, nil
	}
	hooks, vers := versionArrays(versions)
	var runs []*engine.Run
	err := d.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE runs SET status = 'running', node = $1,
				started_at = (extract(epoch FROM clock_timestamp()) * 1e9)::bigint
			WHERE seq IN (SELECT seq FROM runs WHERE status = 'queued' AND claimable
				AND `+sqlVersionMatch+`
				ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED)
			RETURNING `+runCols+`, seq`, node, n, hooks, vers)
		if err != nil {
			return err
		}
		var seqs []int64
		if runs, seqs, err = collectRuns(rows); err != nil {
			return err
		}
		sortBySeq(runs, seqs)
		for _, r := range runs {
			var prev *int64
			if err := tx.QueryRow(ctx, `SELECT prev_start FROM runs WHERE id = $1`, r.ID).Scan(&prev); err != nil {
				return err
			}
			r.PrevStart = nullTime(prev)
			if _, err := tx.Exec(ctx, `INSERT INTO hook_state (hook, last_start, last_run_id, last_status, last_run_slot)
				VALUES ($1, $2, $3, 'running', $4)
				ON CONFLICT (hook) DO UPDATE SET last_start = excluded.last_start,
					last_run_id = excluded.last_run_id, last_status = excluded.last_status,
					last_run_slot = excluded.last_run_slot`,
				r.Hook, timeInt(r.StartedAt), r.ID, timeInt(r.Slot)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim runs for %s: %w", node, err)
	}
	return runs, nil
}

// Node is a hookd process sharing the database.
type Node struct {
	Name          string
	Started       time.Time
	Heartbeat     time.Time // the latest, on the database's clock
	MaxConcurrent int
	HooksVersion  string
	Running       int  // runs it holds running
	Alive         bool // its heartbeat is within the timeout Nodes was given
	Scheduler     bool // it holds the scheduler lease, unexpired
	// HeartbeatAge is how long ago its latest heartbeat was, on the
	// database's clock.
	HeartbeatAge time.Duration
	// Hooks are the hooks it loaded, name to version, as it last reported
	// them (ReportHookVersions); nil when it never did.
	Hooks map[string]string
}

// silent is the one test of a node's liveness, in SQL: col, a node's
// latest heartbeat, is older than timeout (a parameter, in microseconds)
// on the database's clock. Nodes reports a node alive exactly when
// ExpireNodes, given the same timeout, would not interrupt its runs.
func silent(col, timeout string) string {
	return col + " < now() - " + timeout + " * interval '1 microsecond'"
}

// Heartbeat registers node (or refreshes it): it is alive as long as its
// heartbeats come more often than the timeout ExpireNodes is given.
func (d *DB) Heartbeat(ctx context.Context, node string, maxConcurrent int, hooksVersion string) error {
	_, err := d.pool.Exec(ctx, `INSERT INTO nodes (name, max_concurrent, hooks_version) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET heartbeat_at = now(),
			max_concurrent = excluded.max_concurrent, hooks_version = excluded.hooks_version`,
		node, maxConcurrent, hooksVersion)
	if err != nil {
		return fmt.Errorf("heartbeat of node %s: %w", node, err)
	}
	return nil
}

// Nodes lists the nodes, by name, alive when their latest heartbeat is
// within timeout, with the hooks each reported and which one holds the
// scheduler lease (the lease's holder is the node's name, or the name
// followed by "/" and a process's instance).
func (d *DB) Nodes(ctx context.Context, timeout time.Duration) ([]Node, error) {
	rows, err := d.pool.Query(ctx, `SELECT n.name, n.started_at, n.heartbeat_at, n.max_concurrent, n.hooks_version,
			(SELECT count(*) FROM runs r WHERE r.status = 'running' AND r.node = n.name),
			NOT (`+silent("n.heartbeat_at", "$1")+`),
			EXISTS (SELECT 1 FROM leases l WHERE l.name = $2 AND l.expires_at > now()
				AND split_part(l.holder, '/', 1) = n.name),
			n.hooks_reported_at IS NOT NULL,
			(extract(epoch FROM now() - n.heartbeat_at) * 1e6)::bigint
		FROM nodes n ORDER BY n.name`, timeout.Microseconds(), SchedulerLease)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var out []Node
	byName := map[string]*Node{}
	for rows.Next() {
		var (
			n        Node
			reported bool
			ageMicro int64
		)
		if err := rows.Scan(&n.Name, &n.Started, &n.Heartbeat, &n.MaxConcurrent, &n.HooksVersion, &n.Running, &n.Alive,
			&n.Scheduler, &reported, &ageMicro); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		n.Started, n.Heartbeat = n.Started.UTC(), n.Heartbeat.UTC()
		n.HeartbeatAge = max(time.Duration(ageMicro)*time.Microsecond, 0)
		if reported {
			n.Hooks = map[string]string{}
		}
		out = append(out, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	for i := range out {
		byName[out[i].Name] = &out[i]
	}
	rows, err = d.pool.Query(ctx, `SELECT node, hook, version FROM node_hooks`)
	if err != nil {
		return nil, fmt.Errorf("list hooks of nodes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var node, hook, version string
		if err := rows.Scan(&node, &hook, &version); err != nil {
			return nil, fmt.Errorf("list hooks of nodes: %w", err)
		}
		if n := byName[node]; n != nil && n.Hooks != nil {
			n.Hooks[hook] = version
		}
	}
	return out, rows.Err()
}

// InterruptedByTimeout is the reason of a run whose node stopped
// heartbeating.
const InterruptedByTimeout = "its node stopped heartbeating"

// ExpireNodes marks interrupted, finished at now, the runs held running
// by nodes whose latest heartbeat is older than timeout, and returns
// them oldest first. A node that comes back finds them final: its
// FinishRunOn leaves them as they are.
func (d *DB) ExpireNodes(ctx context.Context, timeout time.Duration, now time.Time) ([]*engine.Run, error) {
	runs, err := d.interrupt(ctx, now, InterruptedByTimeout, `node IN (SELECT name FROM nodes
		WHERE `+silent("heartbeat_at", "$2")+`)`, timeout.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("expire silent nodes: %w", err)
	}
	return runs, nil
}

// RecoverNode marks interrupted the runs that an earlier process of node
// (a node restarted under the same name) left running, and returns them
// oldest first with their process groups, which are on this machine.
func (d *DB) RecoverNode(ctx context.Context, node string, now time.Time) ([]*engine.Run, error) {
	runs, err := d.interrupt(ctx, now, store.InterruptedReason, `node = $2`, node)
	if err != nil {
		return nil, fmt.Errorf("recover runs of node %s: %w", node, err)
	}
	return runs, nil
}

// interrupt marks interrupted the running runs that cond ($2 is arg)
// selects, each owed its follow-up (Member.Owed) until a scheduler stores
// it (Member.Follow) and untold (Member.Untold) until a scheduler stores
// its outcome event (Member.Tell), and the hooks' last status with them.
//
// It locks those runs first, oldest first (by seq), and only then updates
// them. An UPDATE alone locks rows in the order its plan meets them: the
// table's order for a scan, an index's for another plan, and a row an
// update moved comes later in the table. Two interrupts with different
// plans (the scheduler's ExpireNodes and a restarted node's RecoverNode
// over the same node's runs, or two expiries during a failover, or
// after the planner's statistics changed) could then each hold a run the
// other waits for: PostgreSQL then fails one with "deadlock detected"
// (TestFinishWhileExpired, which races ten expiries, did so under load;
// TestExpireLocksRunsOldestFirst does it at will). Locked in one order, they
// wait for each other in line; FinishRunOn locks one run.
func (d *DB) interrupt(ctx context.Context, now time.Time, reason, cond string, arg any) ([]*engine.Run, error) {
	var runs []*engine.Run
	err := d.tx(ctx, func(tx pgx.Tx) error {
		procs, err := runningProcs(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id FROM runs WHERE status = $1 AND `+cond+` ORDER BY seq FOR UPDATE`,
			string(engine.StatusRunning), arg)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		// A run another transaction finished or interrupted while this
		// one waited for it is not locked here (PostgreSQL checks the
		// row again once it has it): it is left as it is.
		rows, err = tx.Query(ctx, `UPDATE runs SET status = 'interrupted', reason = $1, finished_at = $2, owed = true, untold = true
			WHERE id = ANY($3) AND status = $4 RETURNING `+runCols+`, seq`,
			reason, timeArg(now), ids, string(engine.StatusRunning))
		if err != nil {
			return err
		}
		var seqs []int64
		if runs, seqs, err = collectRuns(rows); err != nil {
			return err
		}
		sortBySeq(runs, seqs)
		for _, r := range runs {
			r.Procs = procs[r.ID]
			if _, err := tx.Exec(ctx, `UPDATE hook_state SET last_status = 'interrupted'
				WHERE hook = $1 AND last_run_id = $2`, r.Hook, r.ID); err != nil {
				return err
			}
		}
		return nil
	})
	return runs, err
}

// FinishRunOn stores the final record of a run node holds. A run no
// longer running on node (declared interrupted after its node went
// silent) is left as it is: the error wraps engine.ErrNotFound. The
// check and the write are one UPDATE, so an expiry of node's runs
// (ExpireNodes, itself one UPDATE) and this finish exclude each other:
// whichever commits first wins, the other changes nothing. The run is
// untold (Member.Untold) until a scheduler stores its outcome event.
func (d *DB) FinishRunOn(ctx context.Context, node string, r *engine.Run) error {
	if node == "" {
		return fmt.Errorf("finish run %s: no node named", r.ID)
	}
	return d.finishRun(ctx, r, node)
}

// Listen returns a channel that receives a value (the payload) each time
// channel is notified, on a connection of its own, until ctx ends. It
// returns once LISTEN is in effect, so a NOTIFY committed after it returns
// is delivered.
func (d *DB) Listen(ctx context.Context, channel string) (<-chan string, error) {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", channel, err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		conn.Release()
		return nil, fmt.Errorf("listen on %s: %w", channel, err)
	}
	c := conn.Hijack() // a LISTENing connection never goes back to the pool
	out := make(chan string, 1)
	go func() {
		defer close(out)
		defer c.Close(context.Background())
		for {
			n, err := c.WaitForNotification(ctx)
			if err != nil {
				return
			}
			select {
			case out <- n.Payload:
			default: // a wake-up is pending already; the table is the truth
			}
		}
	}()
	return out, nil
}
