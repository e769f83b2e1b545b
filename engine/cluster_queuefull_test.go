package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestClusterPendingRefusedQueueFull performs a failover to a scheduler
// with a lower max_concurrent (a rolling change of hookd.yaml) on a real
// PostgreSQL: node A (max_concurrent 3, queue_size 1) has runs of a and b
// executing on node B, a pending rerun of a (overlap: queue) and c
// waiting in the full queue when it stops. B (max_concurrent 1,
// queue_size 1) takes over with two runs in flight, more than its
// max_concurrent; when a's run ends, no slot is free and the queue is
// full, so a's pending rerun is refused for queue_full. A waiter on it
// must get that outcome, and its stored record must say so (a pending
// run has a record already: it is finished, not inserted again).
func TestClusterPendingRefusedQueueFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	holdA, runA, runB := newBlock(), newBlock(), newBlock()
	defer close(runB.release)
	hooks := func() []*engine.Hook {
		a := withSteps(newHook("a"), runA)
		a.Overlap = engine.OverlapQueue
		return []*engine.Hook{withSteps(newHook("hold"), holdA), a, withSteps(newHook("b"), runB), withSteps(newHook("c"), newBlock())}
	}
	node := func(name string, nodeMax, maxConcurrent int) *engine.Engine {
		lockNode(ctx, t, url, name)
		return startClusterNode(ctx, t, engine.Config{
			Store: db, Cluster: db.Member(name, nodeMax, 2*time.Second), MaxConcurrent: maxConcurrent, QueueSize: 1,
		}, hooks())
	}

	// A leads and executes hold itself (its one slot as a node).
	a := node("node-a", 1, 3)
	poll(t, "node A leads", func() bool {
		_, err := a.Fire(ctx, "hold", engine.FireOptions{})
		return err == nil
	})
	poll(t, "hold runs on node A", func() bool { return holdA.started.Load() == 1 })
	b := node("node-b", 3, 1)
	if _, err := a.Fire(ctx, "a", engine.FireOptions{}); err != nil {
		t.Fatalf("fire a: %v", err)
	}
	if _, err := a.Fire(ctx, "b", engine.FireOptions{}); err != nil {
		t.Fatalf("fire b: %v", err)
	}
	poll(t, "a and b run on node B", func() bool { return runA.started.Load() == 1 && runB.started.Load() == 1 })
	pending, err := a.Fire(ctx, "a", engine.FireOptions{})
	if err != nil || pending.Status != engine.StatusQueued {
		t.Fatalf("fire a again: %v, %+v; want a pending rerun", err, pending)
	}
	if q, err := a.Fire(ctx, "c", engine.FireOptions{}); err != nil || q.Status != engine.StatusQueued {
		t.Fatalf("fire c: %v, %+v; want it queued", err, q)
	}

	a.Stop() // hold is cancelled; a and b go on executing on B
	poll(t, "node B leads", func() bool { self, _ := b.Scheduler(); return self })
	type waitResult struct {
		run *engine.Run
		err error
	}
	waited := make(chan waitResult, 1)
	wctx, cancelWait := context.WithCancel(ctx)
	defer cancelWait()
	go func() {
		r, err := b.Wait(wctx, pending.ID)
		waited <- waitResult{r, err}
	}()
	close(runA.release) // a's run ends on B: no slot is free, the queue is full

	var got *engine.Run
	poll(t, "the pending run's record is final", func() bool {
		got, err = db.GetRun(ctx, pending.ID)
		return err == nil && got.Status.Final()
	})
	if got.Status != engine.StatusDropped || got.Gate != engine.GateQueueFull || !strings.Contains(got.Reason, "queue_full") {
		t.Errorf("stored pending run %s: %s, gate %q, reason %q; want dropped by queue_full", got.ID, got.Status, got.Gate, got.Reason)
	}
	select {
	case w := <-waited:
		if w.err != nil || w.run == nil || w.run.Status != engine.StatusDropped || w.run.Gate != engine.GateQueueFull {
			t.Errorf("the waiter got %+v, %v; want the run dropped by queue_full", w.run, w.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiter on the pending run was never answered")
	}
	if n := runA.started.Load(); n != 1 {
		t.Errorf("a's step ran %d times; want once (the refused rerun never starts)", n)
	}
}
