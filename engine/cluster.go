package engine

import (
	"context"
	"errors"
	"time"

	"github.com/hookd/hookd/lease"
)

// Cluster is what an engine needs to be one node of several sharing a
// database (PostgreSQL; docs/cluster.md). With Config.Cluster set:
//
//   - one node at a time schedules: the holder of the scheduler lease. It
//     runs the loop and every gate as a single daemon does, rebuilt from
//     the database when it takes the lease over, but it does not execute
//     what it admits: it releases the run to the nodes (Release, fenced
//     by the lease) and counts it in flight until the run's record is
//     final in the store (Final), whichever node ran it;
//   - every node, the scheduler included, claims released runs up to its
//     own capacity (Claim), executes them and records their end
//     (FinishOn); it heartbeats meanwhile, and the scheduler declares the
//     runs of a node that stopped heartbeating interrupted (Expire).
//
// Events and triggers reach the scheduler through the store: an event
// posted to any node is stored pending and dispatched by the scheduler.
type Cluster interface {
	// Member is the scheduler lease: Node, Interval, Timeout, Heartbeat,
	// Lead, Resign, Vacant.
	lease.Member
	// Capacity is how many runs this node executes at once.
	Capacity() int

	// Fence returns ctx for a write of the scheduler's own state (a
	// record, a merge into a pending run, an event's mark, made through
	// Store or MergeFire): the write commits only while this node holds
	// the lease it holds now, and otherwise fails wrapping ErrLeaseLost.
	// A node taking the lease over waits for a fenced write under way
	// to end, so it never reads the state a dead or deposed scheduler is
	// still changing.
	Fence(ctx context.Context) context.Context
	// Release records r (new, or queued before) as queued for the nodes to
	// claim, claiming its slot, recording r.EventSeq as dispatched to r's
	// hook (Store.DispatchedTo), and marks the stored event markSeq
	// dispatched (0: none), in one transaction that also checks the lease:
	// an error wrapping ErrLeaseLost when this node no longer holds it,
	// ErrSlotTaken when the slot fired before.
	Release(ctx context.Context, r *Run, markSeq int64) error
	// Released reports whether run id is released: its record is queued
	// and claimable, running or final. A Release whose error did not say
	// the database refused it (its deadline came, its connection was
	// lost) may have committed all the same; Released tells, once no
	// commit of it can be under way any more.
	Released(ctx context.Context, id string) (bool, error)
	// InFlight returns the runs released and not final (claimed or not);
	// Waiting the queued runs not released (the queue and pending runs).
	InFlight(ctx context.Context) ([]*Run, error)
	Waiting(ctx context.Context) ([]*Run, error)
	// Final returns the runs among ids whose record is final.
	Final(ctx context.Context, ids []string) ([]*Run, error)
	// Expire marks interrupted the runs of nodes silent for Timeout.
	Expire(ctx context.Context, now time.Time) ([]*Run, error)
	// Owed returns the interrupted runs whose follow-up no scheduler has
	// stored yet, oldest first: Expire and Recover mark each run they
	// interrupt owed in the transaction that interrupts it.
	Owed(ctx context.Context) ([]*Run, error)
	// Follow stores the follow-up a scheduler decided for the interrupted
	// run id, the pending retry retry or the pending rerun rerun (each
	// nil when not), and that the run is owed nothing more, in one
	// transaction that also checks the lease: an error wrapping
	// ErrLeaseLost when this node no longer holds it, ErrNotFound when
	// the run is owed nothing (another scheduler stored its follow-up);
	// either way nothing is stored.
	Follow(ctx context.Context, id string, retry *PendingRetry, rerun *PendingRerun) error
	// Untold returns the runs whose outcome event no scheduler has stored
	// yet, oldest first: FinishOn, Expire and Recover mark each run they
	// end untold in the transaction that stores its end.
	Untold(ctx context.Context) ([]*Run, error)
	// Tell stores ev, the outcome event of run id, pending (as
	// Store.AppendPendingEvent, for the scheduler to dispatch) and that
	// the run is untold no more, in one transaction that also checks the
	// lease and wakes the scheduler (WakeEvents): an error wrapping
	// ErrLeaseLost when this node no longer holds it, ErrNotFound when the
	// run is not untold (another scheduler stored its event); either way
	// nothing is stored.
	Tell(ctx context.Context, id string, ev *Event) error

	// Loaded reports the hooks this node has loaded (at start and after
	// each reload): Claim gives it only runs of these hooks at the version
	// it has.
	Loaded(ctx context.Context, hooks []*Hook) error
	// Recover marks interrupted the runs an earlier process of this node
	// left running, with their process groups (on this machine).
	Recover(ctx context.Context, now time.Time) ([]*Run, error)
	// Claim starts up to n released runs on this node, oldest first.
	Claim(ctx context.Context, n int) ([]*Run, error)
	// FinishOn stores the final record of a run this node holds; a run it
	// no longer holds (declared interrupted) wraps ErrNotFound.
	FinishOn(ctx context.Context, r *Run) error

	// RequestFire stores a fire for the scheduler to decide and wakes it
	// (WakeEvents), in one transaction (clusterfire.go).
	RequestFire(ctx context.Context, req FireRequest) error
	// FireAnswer returns the scheduler's answer to request id; ok is false
	// while it has none. A request that is gone is an error.
	FireAnswer(ctx context.Context, id string) (a FireAnswer, ok bool, err error)
	// WithdrawFire deletes request id unless it is answered; one being
	// decided is waited for. withdrawn reports whether it was deleted.
	WithdrawFire(ctx context.Context, id string) (withdrawn bool, err error)
	// DecideFires, on the scheduler, takes the unanswered requests one at
	// a time, oldest first, and stores decide's answer in the transaction
	// that holds the request, notifying WakeDone; a request decide fails
	// is left unanswered, and DecideFires stops there.
	DecideFires(ctx context.Context, decide func(context.Context, FireRequest) (FireAnswer, error)) (int, error)
	// MergeFire stores r, the pending run fire request fire merged into,
	// as Store.UpdateQueued does, and records the merge, in one
	// transaction: a scheduler deciding the request again after a
	// failover finds it (FireMergedInto) instead of firing again.
	MergeFire(ctx context.Context, r *Run, fire string) error
	// FireMergedInto returns the id of the run fire request fire was
	// merged into; one never merged wraps ErrNotFound.
	FireMergedInto(ctx context.Context, fire string) (string, error)

	// Notify tells every node about w, with a payload (a run id for
	// WakeDone and WakeCancel).
	Notify(ctx context.Context, w Wake, payload string) error
	// Wakes delivers what other nodes (and this one) Notify, until ctx
	// ends. A wake-up may be lost (a reconnect): the engine polls as well.
	Wakes(ctx context.Context) <-chan WakeUp
}

// Wake is what a cluster wake-up is about.
type Wake int

const (
	WakeWork   Wake = iota // runs were released: claim
	WakeDone               // a run's record is final (payload: its id)
	WakeEvents             // events were stored (pending ones to dispatch, the live stream to read)
	WakeCancel             // cancel a run (payload: cancelRequest)
)

// WakeUp is one wake-up.
type WakeUp struct {
	Wake    Wake
	Payload string
}

// ErrLeaseLost is wrapped by a scheduler's write refused because another
// node holds the scheduler lease now, or the lease expired.
var ErrLeaseLost = errors.New("engine: the scheduler lease was lost")

// ErrNotScheduler is returned by a node that does not schedule for what
// only the scheduler decides (a fire).
var ErrNotScheduler = errors.New("engine: this node does not schedule")
