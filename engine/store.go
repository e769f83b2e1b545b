package engine

import (
	"context"
	"errors"
	"time"

	"github.com/hookd/hookd/budget"
)

// Sentinel errors of the store contract.
var (
	ErrNotFound  = errors.New("engine: not found")
	ErrSlotTaken = errors.New("engine: slot already fired")
	ErrLocked    = errors.New("engine: database is in use by another hookd")
	// ErrDuplicateEvent is returned by AppendEvent for an event whose ID
	// was stored before; the event's Seq is set to the stored one.
	ErrDuplicateEvent = errors.New("engine: event id already stored")
)

// HookState is what the store keeps of a hook between restarts.
type HookState struct {
	Hook      string
	Paused    bool
	LastSlot  time.Time // latest schedule slot claimed
	LastStart time.Time // when the latest run started
	LastRunID string
	// LastRunSlot is the schedule slot the latest run started for (zero
	// when it filled none: a manual fire, an event): the cooldown is
	// judged from it.
	LastRunSlot time.Time
	LastStatus  Status
	// LastCheckFailed is the check the latest run did not pass
	// (Run.CheckFailed), "" when none.
	LastCheckFailed string
	// FirstSeen is when a scheduling hookd first loaded the hook with a
	// schedule (Store.RecordFirstSeen); zero when none did. The slots of
	// a hook that never fired are missed from then on, none before.
	FirstSeen time.Time
}

// Merged is what a trigger coalesced into a queued run brings that its
// store records with the merge (Store.UpdateQueued): the schedule slot it
// fired for, and the seq of the stored event, still pending, it came from
// (each zero when none).
type Merged struct {
	Slot     time.Time
	EventSeq int64
}

// Store is the one contract of hookd's stores: every method the engine
// and the daemon use, implemented whole by SQLite (package store) and
// PostgreSQL (package store/postgres) and proven by one conformance suite
// (package store/storetest) run against both. Nothing asks a store what it
// can do: a capability is a method of this interface, or it is not one.
//
// Methods that later work adds (a run's trace context) are added here, to both stores and to the suite at once.
type Store interface {
	RecordReader
	WatchSnapshots

	// HookStates returns the saved state of every hook that has any.
	HookStates(ctx context.Context) (map[string]HookState, error)
	// SetPaused records whether a hook is paused.
	SetPaused(ctx context.Context, hook string, paused bool) error
	// RecordFirstSeen records at as the first-seen time (HookState.FirstSeen)
	// of each of hooks that has none, and leaves the others' as they are.
	RecordFirstSeen(ctx context.Context, hooks []string, at time.Time) error

	// Runs.

	// InsertRun records a run that has not started: queued, or final
	// (skipped, dropped, cancelled) with its reason.
	InsertRun(ctx context.Context, r *Run) error
	// StartRun marks a run running (inserting it if new) and, in the same
	// transaction, records the hook's last start and, when r.Slot is set,
	// claims the slot. A slot claimed before fails with ErrSlotTaken and
	// changes nothing.
	StartRun(ctx context.Context, r *Run) error
	// StartRunDispatched is StartRun that also marks the stored event with
	// this seq dispatched, in the same transaction: an event that starts
	// exactly one run costs a write less, and its mark is never apart from
	// the start.
	StartRunDispatched(ctx context.Context, r *Run, seq int64) error
	// StartRunWithEvent stores ev, marked dispatched, setting ev.Seq, and
	// starts r as StartRun does, in one transaction: both or neither. An ID
	// stored before fails with ErrDuplicateEvent and changes nothing.
	StartRunWithEvent(ctx context.Context, r *Run, ev *Event) error
	// FinishRun stores a run's final status and results.
	FinishRun(ctx context.Context, r *Run) error
	// NoteRun appends note to the notes (Run.Notes) of run id's record:
	// what a person should know that came after the record was written (a
	// notification dropped). An unknown run is ErrNotFound.
	NoteRun(ctx context.Context, id, note string) error
	// QueuedRuns returns the runs with status queued, oldest first.
	QueuedRuns(ctx context.Context) ([]*Run, error)
	// UpdateQueued replaces the event data of a queued run (coalescing).
	// What merged names was merged into r, and is recorded in the same
	// transaction: a schedule slot as r's, the hook's last slot advancing
	// to it, so that a restart does not fire it again; a stored event
	// still pending as dispatched to r's hook (DispatchedTo), so that a
	// dispatch of it again after a crash does not merge it twice.
	UpdateQueued(ctx context.Context, r *Run, merged Merged) error
	// RecoverInterrupted marks runs left running by a crash interrupted,
	// and the hooks' last status with them, and returns them with the
	// process groups recorded for them (AddRunProc). Each is owed its
	// follow-up (Owed), in the transaction that interrupts it, until
	// Follow stores it.
	RecoverInterrupted(ctx context.Context, now time.Time) ([]*Run, error)
	// Owed returns the interrupted runs whose follow-up no engine has
	// stored yet, oldest first: those RecoverInterrupted marked (now, or
	// by a hookd killed, or whose store failed, before it stored theirs).
	Owed(ctx context.Context) ([]*Run, error)
	// Follow stores the follow-up an engine decided for the interrupted
	// run id, the pending retry retry or the pending rerun rerun (each
	// nil when not), and that the run is owed nothing more, in one
	// transaction: an error wrapping ErrNotFound when the run is owed
	// nothing, and then nothing is stored. A cluster's scheduler stores
	// it through Cluster.Follow, fenced by the lease.
	Follow(ctx context.Context, id string, retry *PendingRetry, rerun *PendingRerun) error
	// AddRunProc appends a process group to the record of run id, so that
	// a hookd started after a crash can kill what the dead one left
	// running. An engine with a ProcJournal records them there instead (no
	// commit); what a store holds is still returned and reaped.
	AddRunProc(ctx context.Context, id string, g ProcGroup) error
	// LastFingerprint returns the context fingerprint of the hook's latest
	// run that reached the model or was short-circuited.
	LastFingerprint(ctx context.Context, hook string) (string, error)
	// StartsSince returns the start times of hook's runs that started at
	// or after since, oldest first (a rate: window survives a restart).
	StartsSince(ctx context.Context, hook string, since time.Time) ([]time.Time, error)
	// LatestBriefs returns the latest n runs of hook, newest first, with
	// only what a chart needs.
	LatestBriefs(ctx context.Context, hook string, n int) ([]RunBrief, error)
	// BriefsSince returns up to limit runs queued at or after since,
	// newest first.
	BriefsSince(ctx context.Context, since time.Time, limit int) ([]RunBrief, error)
	// RunIDsWithPrefix returns up to limit run ids beginning with prefix,
	// in id order (hookd run takes a unique prefix).
	RunIDsWithPrefix(ctx context.Context, prefix string, limit int) ([]string, error)

	// Events. An event is delivered once to each hook it matches across a
	// crash (or a cluster's failover): it is stored pending and
	// dispatched; the first record of each run it triggers (started,
	// queued, pending or refused by a gate) and each merge of it into a
	// pending run records, in its own transaction, that the event reached
	// that hook (Run.EventSeq, Merged.EventSeq); the event is marked
	// dispatched once those records are stored. Engine.DispatchPending
	// dispatches what a crash left pending, to the hooks it had not
	// reached.

	// AppendEvent stores an event, marked dispatched, and fills in its
	// sequence number; an ID stored before gives ErrDuplicateEvent.
	AppendEvent(ctx context.Context, ev *Event) error
	// AppendEvents stores events in one transaction, skipping IDs stored
	// before.
	AppendEvents(ctx context.Context, evs []*Event) error
	// AppendEventsLater stores events as AppendEvents does, where the
	// store can in the next commit of its other writes (SQLite) or, when
	// none comes, in one of their own a few milliseconds later, and
	// returns once they are stored. The engine stores its own events
	// (hook.run.*, hook.step.*, ...) this way.
	AppendEventsLater(ctx context.Context, evs []*Event) error
	// AppendPendingEvent stores ev, marked not yet dispatched, and sets its
	// Seq; an ID stored before gives ErrDuplicateEvent (and the stored Seq)
	// and changes nothing.
	AppendPendingEvent(ctx context.Context, ev *Event) error
	// MarkDispatched records that the event with this seq was dispatched,
	// and drops the records of the hooks it reached (DispatchedTo): they
	// are kept only while it is pending.
	MarkDispatched(ctx context.Context, seq int64) error
	// PendingEvents returns up to limit events not yet dispatched, oldest
	// first.
	PendingEvents(ctx context.Context, limit int) ([]*Event, error)
	// DispatchedTo returns the hooks the event with this seq reached while
	// it was pending, sorted: those a run record or a merge recorded it
	// for. A record is kept only for an event still pending.
	DispatchedTo(ctx context.Context, seq int64) ([]string, error)
	// EventsAfter returns up to limit events whose seq is greater than
	// after, oldest first (0 or less means 50): the live stream reads on
	// from the last event it sent.
	EventsAfter(ctx context.Context, after int64, limit int) ([]*Event, error)
	// LastEventSeq returns the seq of the latest event, 0 when none.
	LastEventSeq(ctx context.Context) (int64, error)
	// SetEventFate stores what became of the stored event with this seq
	// (Event.Fate, read back by ListEvents and EventsAfter), replacing
	// what was stored; it is kept, and pruned, with the event. An event
	// stored with its Fate set (AppendEvent, StartRunWithEvent) needs no
	// call.
	SetEventFate(ctx context.Context, seq int64, f *EventFate) error

	// Retries: a hook's retry: plans the next attempt as a pending retry,
	// kept across a restart.

	// AddRetry records a pending retry.
	AddRetry(ctx context.Context, r *PendingRetry) error
	// PendingRetries returns the pending retries, earliest due first.
	PendingRetries(ctx context.Context) ([]*PendingRetry, error)
	// DeleteRetry forgets a pending retry (it fired, or its hook is gone).
	DeleteRetry(ctx context.Context, runID string) error

	// Reruns: the rerun of a run a crash interrupted (on_interrupted:
	// rerun) that a daemonless command recovered, kept for the next hookd
	// that schedules; on a cluster, also one its scheduler decided
	// (Cluster.Follow), kept until it starts.

	// AddRerun records a pending rerun.
	AddRerun(ctx context.Context, r *PendingRerun) error
	// PendingReruns returns the pending reruns, oldest planned first.
	PendingReruns(ctx context.Context) ([]*PendingRerun, error)
	// DeleteRerun forgets a pending rerun (it started, or its hook is
	// gone); runID is the rerun's RunID.
	DeleteRerun(ctx context.Context, runID string) error

	// The spend ledger, so that a restart does not reset a budget.

	// AddUsage records u (a second record of the same run replaces the
	// first) and deletes the records older than u.At - budget.UsageKept.
	AddUsage(ctx context.Context, u *budget.Usage) error
	// UsageSince returns the records at or after since, oldest first.
	UsageSince(ctx context.Context, since time.Time) ([]*budget.Usage, error)

	// Observe sets what the store tells of its writes as they return
	// (the daemon's live stream is woken so), replacing what was set
	// before. Set it before the store is shared.
	Observe(o StoreObserver)

	// Upkeep.

	// Prune deletes the history p's retention lets go, as of now.
	Prune(ctx context.Context, now time.Time, p PrunePolicy) (PruneStats, error)
	// Size returns the database's size on disk.
	Size(ctx context.Context) (StoreSize, error)
	// Close closes the store; it is safe to call twice.
	Close() error
}

// StoreObserver is told by a store of its writes, on the writer's
// goroutine, after each write returned (committed or not); a function
// must not block, and a nil one is not called. The store calls it: no
// wrapper around a store is needed to watch it.
type StoreObserver struct {
	// EventsStored follows every write that stores events: AppendEvent,
	// AppendEvents, AppendEventsLater, AppendPendingEvent and
	// StartRunWithEvent.
	EventsStored func()
}

// RecordReader is the read side of the store that steps and tools use.
type RecordReader interface {
	// GetRun returns a run by id, or ErrNotFound.
	GetRun(ctx context.Context, id string) (*Run, error)
	// ListRuns returns runs, newest first.
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, error)
	// ListEvents returns stored events, newest first.
	ListEvents(ctx context.Context, typ string, limit int) ([]*Event, error)
	// SearchRuns searches the full-text index of finished runs: the
	// memory_search step, the search_runs tool, `hookd search` and GET
	// /v1/search read it.
	SearchRuns(ctx context.Context, q SearchQuery) ([]SearchHit, error)
}

// PrunePolicy says what Store.Prune deletes.
type PrunePolicy struct {
	Retention
	// Hooks holds the hooks' own retention of their runs, by name.
	Hooks map[string]HookRetention
	// Batch bounds the rows deleted per write transaction (0: the store's
	// default), so the daemon's own writes wait at most for one.
	Batch int
	// DryRun counts what would be deleted and deletes nothing.
	DryRun bool
}

// PruneStats says what Store.Prune deleted (or, on a dry run, would
// delete).
type PruneStats struct {
	Runs       int64         `json:"runs"`        // finished runs
	Skipped    int64         `json:"skipped"`     // skip and drop records
	Events     int64         `json:"events"`      // dispatched events
	Batches    int           `json:"batches"`     // write transactions that deleted
	FreedBytes int64         `json:"freed_bytes"` // returned to the file system by incremental vacuum
	Took       time.Duration `json:"took_ns"`
	DryRun     bool          `json:"dry_run,omitempty"`
}

// StoreSize is a database's size on disk.
type StoreSize struct {
	Bytes     int64 `json:"bytes"`      // the database (SQLite's file)
	WALBytes  int64 `json:"wal_bytes"`  // its write-ahead log (SQLite)
	FreeBytes int64 `json:"free_bytes"` // pages inside the file that hold nothing (SQLite)
}
