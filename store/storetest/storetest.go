// Package storetest is the contract of hookd's stores as a test suite:
// what the engine and the daemon rely on, run against every
// implementation (SQLite in package store, PostgreSQL in package
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
	"github.com/hookd/hookd/store"
)

// Store is what the suite tests: the engine's store interfaces, the event
// log the live stream reads, and Close.
type Store interface {
	engine.Store
	engine.DispatchStore
	engine.ProcStore
	engine.WatchSnapshots
	engine.RetryStore
	engine.UsageStore
	engine.RunSearcher
	engine.RateStore
	// LatestBriefs returns the latest n runs of hook, newest first, with
	// only what a chart needs.
	LatestBriefs(ctx context.Context, hook string, n int) ([]engine.RunBrief, error)
	// BriefsSince returns up to limit runs queued at or after since,
	// newest first.
	BriefsSince(ctx context.Context, since time.Time, limit int) ([]engine.RunBrief, error)
	// RunIDsWithPrefix returns up to limit run ids beginning with
	// prefix, in id order (hookd run takes a unique prefix).
	RunIDsWithPrefix(ctx context.Context, prefix string, limit int) ([]string, error)
	// EventsAfter returns up to limit events whose seq is greater than
	// after, oldest first (0 or less means 50).
	EventsAfter(ctx context.Context, after int64, limit int) ([]*engine.Event, error)
	// LastEventSeq returns the seq of the latest event, 0 when none.
	LastEventSeq(ctx context.Context) (int64, error)
	// Prune deletes the history a retention policy lets go (the rules are
	// the SQLite store's, store.DB.Prune).
	Prune(ctx context.Context, now time.Time, p store.PrunePolicy) (store.PruneStats, error)
	// Close closes the store; it is safe to call twice.
	Close() error
}

// Open opens a handle on one database; each call opens another handle
// on the same database.
type Open func() (Store, error)

// Opener makes a new, empty database for t and returns how to open it.
type Opener func(t *testing.T) Open

// Run runs the contract suite, each test on a new database.
func Run(t *testing.T, newDB Opener) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
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
	{"InsertRun", testInsertRun},
	{"StartRunQueued", testStartRunQueued},
	{"StartFinishHookState", testStartFinishHookState},
	{"SetPaused", testSetPaused},
	{"SlotClaim", testSlotClaim},
	{"ConcurrentSlotClaim", testConcurrentSlotClaim},
	{"ListRuns", testListRuns},
	{"ListRunsDefaultLimit", testListRunsDefaultLimit},
	{"ListRunsByTime", testListRunsByTime},
	{"Briefs", testBriefs},
	{"QueuedRunsSurviveReopen", testQueuedRunsSurviveReopen},
	{"UpdateQueuedRecordsMergedSlot", testUpdateQueuedRecordsMergedSlot},
	{"UpdateQueuedRefusesOthers", testUpdateQueuedRefusesOthers},
	{"RecoverInterrupted", testRecoverInterrupted},
	{"RecoverInterruptedReturnsProcs", testRecoverInterruptedReturnsProcs},
	{"LastFingerprint", testLastFingerprint},
	{"SkipRecordsCollapse", testSkipRecordsCollapse},
	{"AppendEvent", testAppendEvent},
	{"AppendEventsBatch", testAppendEventsBatch},
	{"PendingEvents", testPendingEvents},
	{"DispatchRecords", testDispatchRecords},
	{"EventsAfter", testEventsAfter},
	{"WatchSnapshots", testWatchSnapshots},
	{"PendingRetries", testPendingRetries},
	{"Usage", testUsage},
	{"StartsSince", testStartsSince},
	{"RunIDsWithPrefix", testRunIDsWithPrefix},
	{"PruneKeepsWhatMatters", testPruneKeepsWhatMatters},
	{"PruneInBatches", testPruneInBatches},
	{"SearchRuns", testSearchRuns},
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
