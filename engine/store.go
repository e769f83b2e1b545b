package engine

import (
	"context"
	"errors"
	"time"
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
	Hook       string
	Paused     bool
	LastSlot   time.Time // latest schedule slot claimed
	LastStart  time.Time // when the latest run started
	LastRunID  string
	LastStatus Status
}

// Merged is what a trigger coalesced into a queued run brings that its
// store records with the merge (Store.UpdateQueued): the schedule slot it
// fired for, and the seq of the stored event, still pending, it came from
// (each zero when none).
type Merged struct {
	Slot     time.Time
	EventSeq int64
}

// Store persists runs, schedule state, the queue and events. The engine
// consumes it; package store implements it on SQLite.
type Store interface {
	// HookStates returns the saved state of every hook that has any.
	HookStates(ctx context.Context) (map[string]HookState, error)
	// SetPaused records whether a hook is paused.
	SetPaused(ctx context.Context, hook string, paused bool) error

	// InsertRun records a run that has not started: queued, or final
	// (skipped, dropped, cancelled) with its reason.
	InsertRun(ctx context.Context, r *Run) error
	// StartRun marks a run running (inserting it if new) and, in the same
	// transaction, records the hook's last start and, when r.Slot is set,
	// claims the slot. A slot claimed before fails with ErrSlotTaken and
	// changes nothing.
	StartRun(ctx context.Context, r *Run) error
	// FinishRun stores a run's final status and results.
	FinishRun(ctx context.Context, r *Run) error
	// GetRun returns a run by id, or ErrNotFound.
	GetRun(ctx context.Context, id string) (*Run, error)
	// ListRuns returns runs, newest first.
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, error)
	// QueuedRuns returns the runs with status queued, oldest first.
	QueuedRuns(ctx context.Context) ([]*Run, error)
	// UpdateQueued replaces the event data of a queued run (coalescing).
	// What merged names was merged into r, and is recorded in the same
	// transaction: a schedule slot as r's, the hook's last slot advancing
	// to it, so that a restart does not fire it again; a stored event
	// still pending as dispatched to r's hook (DispatchStore), so that a
	// dispatch of it again after a crash does not merge it twice.
	UpdateQueued(ctx context.Context, r *Run, merged Merged) error
	// RecoverInterrupted marks runs left running by a crash interrupted,
	// and the hooks' last status with them, and returns them.
	RecoverInterrupted(ctx context.Context, now time.Time) ([]*Run, error)
	// LastFingerprint returns the context fingerprint of the hook's latest
	// run that reached the model or was short-circuited.
	LastFingerprint(ctx context.Context, hook string) (string, error)

	// AppendEvent stores an event and fills in its sequence number; an ID
	// stored before gives ErrDuplicateEvent.
	AppendEvent(ctx context.Context, ev *Event) error
	// AppendEvents stores events in one transaction, skipping IDs stored
	// before.
	AppendEvents(ctx context.Context, evs []*Event) error
	// ListEvents returns stored events, newest first.
	ListEvents(ctx context.Context, typ string, limit int) ([]*Event, error)
}

// EventLogStore is a Store that can store events without a transaction
// of their own. The engine stores its own events (hook.run.*,
// hook.step.*, ...) this way when the store is one.
type EventLogStore interface {
	// AppendEventsLater stores events as AppendEvents does, in the next
	// commit of the store's other writes or, when none comes, in one of
	// their own a few milliseconds later, and returns once they are
	// stored.
	AppendEventsLater(ctx context.Context, evs []*Event) error
}

// ProcStore is a Store that keeps the process groups a running run's
// steps start, so that RecoverInterrupted returns them with the run and a
// hookd started after a crash can kill what the dead one left running.
// An engine with a ProcJournal records them there instead (no commit);
// what a store holds is still returned and reaped.
type ProcStore interface {
	// AddRunProc appends a process group to the record of run id.
	AddRunProc(ctx context.Context, id string, g ProcGroup) error
}
