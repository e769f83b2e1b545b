// Package storetest is the contract of hookd's stores (engine.Store) as
// a test suite: every method the engine and the daemon rely on, run
// against every implementation (SQLite in package store, PostgreSQL in package
// store/postgres) so that they cannot drift apart.
//
// An implementation's test calls Run with an Opener:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Open {
//			path := filepath.Join(t.TempDir(), "hookd.db")
//			return func() (storetest.Store, error) { return store.Open(path) }
//		})
//	}
package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// Store is what the suite tests: the whole store contract.
type Store = engine.Store

// Open opens a handle on one database; each call opens another handle
// on the same database.
type Open func() (Store, error)

// Opener makes a new, empty database for t and returns how to open it.
type Opener func(t *testing.T) Open

// Run runs the contract suite, each test on a new database, in
// parallel: they share nothing but the Opener, which must allow it.
func Run(t *testing.T, newDB Opener) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, &env{t: t, open: newDB(t)})
		})
	}
}

var tests = []struct {
	name string
	fn   func(*testing.T, *env)
}{
	{"RunRoundTrip", testRunRoundTrip},
	{"TimesReadBackInUTC", testTimesReadBackInUTC},
	{"GetRunNotFound", testGetRunNotFound},
	{"NoteRun", testNoteRun},
	{"InsertRun", testInsertRun},
	{"StartRunQueued", testStartRunQueued},
	{"StartRunDispatched", testStartRunDispatched},
	{"StartRunWithEvent", testStartRunWithEvent},
	{"StartFinishHookState", testStartFinishHookState},
	{"SetPaused", testSetPaused},
	{"RecordFirstSeen", testRecordFirstSeen},
	{"SlotClaim", testSlotClaim},
	{"ConcurrentSlotClaim", testConcurrentSlotClaim},
	{"ListRuns", testListRuns},
	{"ListRunsDefaultLimit", testListRunsDefaultLimit},
	{"ListRunsByTime", testListRunsByTime},
	{"Briefs", testBriefs},
	{"QueuedRunsSurviveReopen", testQueuedRunsSurviveReopen},
	{"UpdateQueuedRecordsMergedSlot", testUpdateQueuedRecordsMergedSlot},
	{"UpdateQueuedRefusesOthers", testUpdateQueuedRefusesOthers},
	{"CoalescedTraceLinks", testCoalescedTraceLinks},
	{"StartedByTraceLinks", testStartedByTraceLinks},
	{"RecoverInterrupted", testRecoverInterrupted},
	{"RecoverInterruptedReturnsProcs", testRecoverInterruptedReturnsProcs},
	{"RecoveredRunsOwedFollowUp", testRecoveredRunsOwedFollowUp},
	{"LastFingerprint", testLastFingerprint},
	{"SkipRecordsCollapse", testSkipRecordsCollapse},
	{"AppendEvent", testAppendEvent},
	{"AppendEventsBatch", testAppendEventsBatch},
	{"AppendEventsLater", testAppendEventsLater},
	{"Observer", testObserver},
	{"PendingEvents", testPendingEvents},
	{"DispatchRecords", testDispatchRecords},
	{"EventsAfter", testEventsAfter},
	{"EventFate", testEventFate},
	{"WatchSnapshots", testWatchSnapshots},
	{"PendingRetries", testPendingRetries},
	{"PendingReruns", testPendingReruns},
	{"Usage", testUsage},
	{"StartsSince", testStartsSince},
	{"RunIDsWithPrefix", testRunIDsWithPrefix},
	{"PruneKeepsWhatMatters", testPruneKeepsWhatMatters},
	{"PruneInBatches", testPruneInBatches},
	{"SearchRuns", testSearchRuns},
	{"SizeAndClose", testSizeAndClose},
}

// t0 is a fixed instant with nanoseconds, so round trips show truncation.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

// env is one test's database.
type env struct {
	t    *testing.T
	open Open
}

// store opens a handle, closed when the test ends.
func (e *env) store() Store {
	e.t.Helper()
	s, err := e.open()
	if err != nil {
		e.t.Fatalf("open store: %v", err)
	}
	e.t.Cleanup(func() { s.Close() })
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func isSlotTaken(err error) bool { return errors.Is(err, engine.ErrSlotTaken) }

func runIDs(runs []*engine.Run) []string {
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

func checkState(t *testing.T, s Store, want engine.HookState) {
	t.Helper()
	states, err := s.HookStates(context.Background())
	must(t, err)
	if got := states[want.Hook]; got != want {
		t.Errorf("hook state\n got %+v\nwant %+v", got, want)
	}
}

type storeSnapshot struct {
	Runs   []*engine.Run
	States map[string]engine.HookState
}

func snapshot(t *testing.T, s Store) storeSnapshot {
	t.Helper()
	runs, err := s.ListRuns(context.Background(), engine.RunFilter{Limit: 1000})
	must(t, err)
	states, err := s.HookStates(context.Background())
	must(t, err)
	return storeSnapshot{runs, states}
}
