package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// callLog records, in order, a scheduler's calls that bound its passes
// over the owed runs and those it makes for each owed run: "reruns"
// (PendingReruns, which begins a poll), "owed" (Cluster.Owed, read
// before a takeover's or a poll's owed runs are followed), "retries"
// (PendingRetries), "follow" or "follow failed" (Cluster.Follow) and
// "tell" or "tell failed" (Cluster.Tell, an outcome event stored).
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) add(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
}

// passes are the calls from each Owed to the next PendingReruns: the
// store calls of one takeover's or poll's batch of owed runs.
func (l *callLog) passes() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]string
	in := false
	for _, c := range l.calls {
		switch {
		case c == "owed":
			out, in = append(out, nil), true
		case c == "reruns":
			in = false
		case in:
			out[len(out)-1] = append(out[len(out)-1], c)
		}
	}
	return out
}

func (l *callLog) count(call string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c == call {
			n++
		}
	}
	return n
}

// countedStore is the scheduler's store, its PendingReruns and
// PendingRetries logged.
type countedStore struct {
	*postgres.DB
	log *callLog
}

func (s *countedStore) PendingReruns(ctx context.Context) ([]*engine.PendingRerun, error) {
	s.log.add("reruns")
	return s.DB.PendingReruns(ctx)
}

func (s *countedStore) PendingRetries(ctx context.Context) ([]*engine.PendingRetry, error) {
	s.log.add("retries")
	return s.DB.PendingRetries(ctx)
}

// countedFollow is the scheduler's member, its Owed, Follow and Tell
// logged. Its first Follow and its first Tell fail without committing,
// as ones the database does not answer within StoreTimeout. While hold is set it reads no run's
// end (Final finds none), so that the next poll after hold is cleared
// reads the ends of all the runs that ended meanwhile.
type countedFollow struct {
	*postgres.Member
	log        *callLog
	hold       atomic.Bool
	failed     atomic.Bool
	tellFailed atomic.Bool
}

func (c *countedFollow) Tell(ctx context.Context, id string, ev *engine.Event) error {
	if c.tellFailed.CompareAndSwap(false, true) {
		c.log.add("tell failed")
		return fmt.Errorf("tell the outcome of run %s: %w", id, context.DeadlineExceeded)
	}
	c.log.add("tell")
	return c.Member.Tell(ctx, id, ev)
}

func (c *countedFollow) Final(ctx context.Context, ids []string) ([]*engine.Run, error) {
	if c.hold.Load() {
		return nil, nil
	}
	return c.Member.Final(ctx, ids)
}

func (c *countedFollow) Owed(ctx context.Context) ([]*engine.Run, error) {
	c.log.add("owed")
	return c.Member.Owed(ctx)
}

func (c *countedFollow) Follow(ctx context.Context, id string, retry *engine.PendingRetry, rerun *engine.PendingRerun) error {
	if c.failed.CompareAndSwap(false, true) {
		c.log.add("follow failed")
		return fmt.Errorf("follow interrupted run %s: %w", id, context.DeadlineExceeded)
	}
	c.log.add("follow")
	return c.Member.Follow(ctx, id, retry, rerun)
}

// TestClusterFollowBatch interrupts three runs at once on a real
// PostgreSQL (their worker is killed and restarts), so that the
// scheduler follows the three up in one poll, and the first Follow
// fails. The scheduler reads the pending retries once for the batch,
// not once for each run, and attempts no Follow after the failed one in
// that poll: the rest stay owed and are followed at the next poll. Before,
// each run cost a PendingRetries and a Follow, each bounded by
// StoreTimeout, so that a database that did not answer held the
// scheduling loop (Emit, fires, slots) for two or three StoreTimeouts a
// run. The same for the runs' outcome events (Cluster.Tell, one a run):
// the first Tell fails, and no Tell follows it in that poll.
func TestClusterFollowBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	hooks := func() []*engine.Hook {
		return []*engine.Hook{heldHook(t, "h1"), heldHook(t, "h2"), heldHook(t, "h3")}
	}

	log := &callLog{}
	lockNode(ctx, t, url, "node-a")
	sched := &countedFollow{Member: db.Member("node-a", 0, 2*time.Second), log: log}
	a := startClusterNode(ctx, t, engine.Config{Store: &countedStore{DB: db, log: log}, Cluster: sched, MaxConcurrent: 8}, hooks())
	poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })

	lockW, err := postgres.LockNode(ctx, url, "node-w")
	if err != nil {
		t.Fatal(err)
	}
	worker := &killedWorker{Member: db.Member("node-w", 4, 2*time.Second)}
	w := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: worker, MaxConcurrent: 8}, hooks())
	if _, err := a.Emit(ctx, &engine.Event{ID: "e1", Type: "job.done"}); err != nil {
		t.Fatal(err)
	}
	runs := func(status engine.Status) bool {
		for _, h := range []string{"h1", "h2", "h3"} {
			rs, err := db.ListRuns(ctx, engine.RunFilter{Hook: h, Limit: 10})
			if err != nil || len(rs) != 1 || rs[0].Status != status {
				return false
			}
		}
		return true
	}
	poll(t, "e1's three runs execute on W", func() bool { return runs(engine.StatusRunning) })
	sched.hold.Store(true)
	worker.dead.Store(true)
	w.Stop() // W is killed: its runs stay running in the store
	if err := lockW.Unlock(); err != nil {
		t.Fatal(err)
	}
	// W restarts and marks its runs interrupted; A reads their three ends
	// in one poll and follows them up.
	lockNode(ctx, t, url, "node-w")
	startClusterNode(ctx, t, engine.Config{Store: db, Cluster: db.Member("node-w", 4, 2*time.Second), MaxConcurrent: 8}, hooks())
	poll(t, "W marks its three runs interrupted", func() bool { return runs(engine.StatusInterrupted) })
	sched.hold.Store(false)

	poll(t, "the three interrupted runs are followed up", func() bool { return log.count("follow") == 3 })
	poll(t, "the three interrupted runs' outcomes are told", func() bool { return log.count("tell") == 3 })
	var failedIn, tellFailedIn []string
	isTell := func(c string) bool { return strings.HasPrefix(c, "tell") }
	for _, pass := range log.passes() {
		follows, retries := 0, 0
		for _, c := range pass {
			switch c {
			case "follow", "follow failed":
				follows++
			case "retries":
				retries++
			}
		}
		if follows > 0 && retries != 1 {
			t.Errorf("a pass over the owed runs read the pending retries %d times for %d runs; want once: %q", retries, follows, pass)
		}
		for i, c := range pass {
			if c == "follow failed" {
				failedIn = pass
				if rest := slices.DeleteFunc(slices.Clone(pass[i+1:]), isTell); len(rest) != 0 {
					t.Errorf("after the failed Follow, the pass went on with %q; want the rest of the batch left owed to the next poll", rest)
				}
			}
			if c == "tell failed" {
				tellFailedIn = pass
				if rest := slices.DeleteFunc(slices.Clone(pass[i+1:]), func(c string) bool { return !isTell(c) }); len(rest) != 0 {
					t.Errorf("after the failed Tell, the pass went on with %q; want the rest of the poll's outcomes left untold to the next poll", rest)
				}
			}
		}
	}
	if failedIn == nil {
		t.Fatalf("no pass over the owed runs had the failed Follow: %q", log.passes())
	}
	if tellFailedIn == nil {
		t.Fatalf("no pass over the owed runs had the failed Tell: %q", log.passes())
	}
	if log.count("follow failed") != 1 {
		t.Errorf("Follow failed %d times; want once", log.count("follow failed"))
	}
}
