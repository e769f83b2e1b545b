package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// slowMerges is a scheduler's PostgreSQL store whose merges into a
// pending run of hook, while hold is set, do not return until unhold is
// closed (a slow database: they do not fail), and which counts the reads
// of the hooks the event with seq reached, once each returned.
type slowMerges struct {
	*postgres.DB
	hook    string
	hold    atomic.Bool
	holding atomic.Int32 // merges held now
	unhold  chan struct{}
	seq     atomic.Int64
	reads   atomic.Int32
}

func (s *slowMerges) UpdateQueued(ctx context.Context, r *engine.Run, merged engine.Merged) error {
	if s.hold.Load() && r.Hook == s.hook {
		s.holding.Add(1)
		defer s.holding.Add(-1)
		<-s.unhold
	}
	return s.DB.UpdateQueued(ctx, r, merged)
}

func (s *slowMerges) DispatchedTo(ctx context.Context, seq int64) ([]string, error) {
	hooks, err := s.DB.DispatchedTo(ctx, seq)
	if seq == s.seq.Load() {
		s.reads.Add(1)
	}
	return hooks, err
}

// failingReleaseOf is a scheduler whose releases of hook fail while fail
// is set, as a database that drops the connection mid-commit does.
type failingReleaseOf struct {
	*postgres.Member
	hook string
	fail atomic.Bool
}

func (m *failingReleaseOf) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	if m.fail.Load() && r.Hook == m.hook {
		return errors.New("release run " + r.ID + ": connection reset by peer")
	}
	return m.Member.Release(ctx, r, markSeq)
}

// heldMerge is a cluster scheduler, node-a, whose event e2 is left
// pending with its merge into hook a's pending run held in the writer
// (heldMergeSetup).
type heldMerge struct {
	t       *testing.T
	db      *postgres.DB
	url     string
	node    *engine.Engine
	st      *slowMerges
	cl      *failingReleaseOf
	first   chan struct{} // a's first run (for e1) executes until closed
	r1      string        // a's first run
	pending string        // a's pending run, e2 merged into it
	mu      sync.Mutex
	withE   int // a's steps that ran with e2's payload, on any node
}

// hooks returns the hooks of a node: a (job.*, overlap: queue) and b
// (job.two).
func (h *heldMerge) hooks() []*engine.Hook {
	a := withSteps(newHook("a"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		if _, ok := env.Scope.Event["e1"]; ok {
			select {
			case <-h.first:
			case <-ctx.Done():
			}
		}
		if _, ok := env.Scope.Event["e2"]; ok {
			h.mu.Lock()
			h.withE++
			h.mu.Unlock()
		}
		return &engine.StepResult{Output: "ran"}, nil
	}))
	a.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}
	a.Overlap = engine.OverlapQueue
	b := withSteps(newHook("b"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		return &engine.StepResult{Output: "ran"}, nil
	}))
	b.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.two"}
	return []*engine.Hook{a, b}
}

// ranWithE is how many times a's step ran with e2's payload.
func (h *heldMerge) ranWithE() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.withE
}

// status is hook's live state on node.
func (h *heldMerge) status(node *engine.Engine, hook string) engine.HookStatus {
	h.t.Helper()
	hs, err := node.Hooks(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	for _, s := range hs {
		if s.Name == hook {
			return s
		}
	}
	h.t.Fatalf("no hook %s", hook)
	return engine.HookStatus{}
}

// heldMergeSetup starts node-a as the scheduler of a and b. a's first run
// executes (e1), and e1b waits as its pending run; then event e2 (job.two)
// merges into that pending run, the merge held in the writer (the
// database is slow), and b's run for e2 is not released (the release
// fails, and fails again while cl.fail is set): e2 stays pending.
func heldMergeSetup(t *testing.T) *heldMerge {
	ctx := context.Background()
	h := &heldMerge{t: t, first: make(chan struct{})}
	h.url, h.db = newClusterDB(ctx, t)
	lockNode(ctx, t, h.url, "node-a")
	h.st = &slowMerges{DB: h.db, hook: "a", unhold: make(chan struct{})}
	h.cl = &failingReleaseOf{Member: h.db.Member("node-a", 4, 2*time.Second), hook: "b"}
	h.node = startClusterNode(ctx, t, engine.Config{Store: h.st, Cluster: h.cl, MaxConcurrent: 8, StoreTimeout: time.Minute}, h.hooks())
	poll(t, "node A leads", func() bool { self, _ := h.node.Scheduler(); return self })

	if _, err := h.node.Emit(ctx, &engine.Event{ID: "e1", Type: "job.one", Data: map[string]any{"e1": true}}); err != nil {
		t.Fatal(err)
	}
	poll(t, "a's run for e1 executing", func() bool { return h.status(h.node, "a").InFlight != "" })
	h.r1 = h.status(h.node, "a").InFlight
	runs, err := h.node.Emit(ctx, &engine.Event{ID: "e1b", Type: "job.one", Data: map[string]any{"e1b": true}})
	if err != nil || len(runs) != 1 || runs[0].Status != engine.StatusQueued {
		t.Fatalf("emit e1b: %v %+v; want a's pending run", err, runs)
	}
	h.pending = runs[0].ID

	h.st.hold.Store(true)
	h.cl.fail.Store(true)
	if _, err := h.node.Emit(ctx, &engine.Event{ID: "e2", Type: "job.two", Data: map[string]any{"e2": true}}); err != nil {
		t.Fatal(err)
	}
	h.st.seq.Store(eventSeq(t, h.db, "e2"))
	poll(t, "e2's merge into a's pending run held", func() bool { return h.st.holding.Load() == 1 })
	if pend, err := pendingOthers(ctx, h.db); err != nil || len(pend) != 1 || pend[0].ID != "e2" {
		t.Fatalf("pending events %v %v; want e2 alone", pend, err)
	}
	return h
}

// admitPending ends a's first run, so that its pending run, e2 merged
// into it, is admitted, and waits until node-a has dispatched e2 again
// twice since (b's release still fails).
func (h *heldMerge) admitPending() {
	close(h.first)
	poll(h.t, "a's pending run admitted once its first run ended", func() bool { return h.status(h.node, "a").InFlight != h.r1 })
	read := h.st.reads.Load()
	poll(h.t, "e2 dispatched again twice", func() bool { return h.st.reads.Load() >= read+2 })
}

// settled reports whether e2 is dispatched and a and b have no run
// waiting or in flight, on node and in the database.
func (h *heldMerge) settled(node *engine.Engine) bool {
	ctx := context.Background()
	if pend, err := pendingOthers(ctx, h.db); err != nil || len(pend) != 0 {
		return false
	}
	return h.idle(node)
}

// idle reports whether a and b have no run waiting or in flight, on node
// and in the database, and no merge is held.
func (h *heldMerge) idle(node *engine.Engine) bool {
	if h.st.holding.Load() != 0 {
		return false
	}
	for _, name := range []string{"a", "b"} {
		if s := h.status(node, name); s.InFlight != "" || s.Queued != 0 {
			return false
		}
		rs, err := h.db.ListRuns(context.Background(), engine.RunFilter{Hook: name, Limit: 100})
		if err != nil {
			return false
		}
		for _, r := range rs {
			if !r.Status.Final() {
				return false
			}
		}
	}
	return true
}

// check fails t unless a ran once with e2's payload (in its pending run)
// and b once.
func (h *heldMerge) check() {
	t := h.t
	ctx := context.Background()
	if n := h.ranWithE(); n != 1 {
		rs, _ := h.db.ListRuns(ctx, engine.RunFilter{Hook: "a", Limit: 100})
		for _, r := range rs {
			t.Logf("a's run %s: %s, event %s", r.ID, r.Status, r.Event)
		}
		t.Errorf("a ran %d times with e2's payload, want once (in its pending run %s)", n, h.pending)
	}
	bs, err := h.db.ListRuns(ctx, engine.RunFilter{Hook: "b", Status: engine.StatusCompleted, Limit: 10})
	if err != nil || len(bs) != 1 {
		t.Errorf("b's completed runs: %d %v; want 1", len(bs), err)
	}
}

// TestClusterRedispatchPassesHeldRecord: an event left pending (the
// release of one of its runs failed) is dispatched again each heartbeat
// interval, and passes by the hooks the scheduler decided for it before,
// including one whose record the writer still holds (the database is
// slow). Event e2 matches a (overlap: queue, in flight with a pending
// rerun) and b: e2 merges into a's pending run, whose merge waits in the
// writer; b's release fails, so e2 stays pending. a's run ends and its
// pending run, which carries e2, is admitted. Before, the scheduler's
// next dispatch of e2 read from the database which hooks e2 reached — not
// a, whose merge had not landed — and gave e2 to a again: a ran twice
// for e2.
func TestClusterRedispatchPassesHeldRecord(t *testing.T) {
	t.Parallel()
	h := heldMergeSetup(t)
	h.admitPending()
	// The database answers again, and b's release goes through.
	close(h.st.unhold)
	h.cl.fail.Store(false)
	poll(t, "e2 dispatched, its runs final and a and b idle", func() bool { return h.settled(h.node) })
	h.check()
}

// TestClusterReleaseAfterItsMerge: a pending run is released only after
// the merges into it the writer holds are stored, and with them the
// events they bring as reached: a scheduler that takes over before such
// an event is marked dispatched passes the hook by. Here node-a's merge
// of e2 into a's pending run is held while that run is admitted, and
// node-a stops (a failover) with e2 pending (b's release failed
// throughout); node-b takes over and dispatches e2 again. Before, node-a
// released the pending run, e2 merged in, before its merge was stored
// (the merge, once it came, found the run no longer queued), and node-b,
// finding no record of e2 at a, gave e2 to a again: a ran twice for e2.
func TestClusterReleaseAfterItsMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := heldMergeSetup(t)
	h.admitPending()
	close(h.st.unhold)
	poll(t, "a's pending run ran with e2 on node A", func() bool { return h.ranWithE() >= 1 && h.idle(h.node) })
	h.node.Stop()

	lockNode(ctx, t, h.url, "node-b")
	b := startClusterNode(ctx, t, engine.Config{Store: h.db, Cluster: h.db.Member("node-b", 4, 2*time.Second), MaxConcurrent: 8}, h.hooks())
	poll(t, "node B dispatches e2, its runs final and a and b idle", func() bool { return h.settled(b) })
	h.check()
}
