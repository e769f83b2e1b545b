package postgres

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// claimedThree is a cluster database where node a holds the scheduler's
// lease (b, whose node lock is held too, does not), and three runs of
// hook h were released: r1 and r2 claimed by node w, r3 by node s. It
// returns the database, the members a and b, and a's node lock.
func claimedThree(ctx context.Context, t *testing.T) (d *DB, a, b *Member, lockA *DaemonLock) {
	t.Helper()
	url := migrated.NewDatabase(t)
	d = open(t, url)
	lockA = lockNodes(ctx, t, url, "a", "b")[0]
	a, b = d.Member("a", 1, time.Hour), d.Member("b", 1, time.Hour)
	if _, ok, err := a.Lead(ctx); err != nil || !ok {
		t.Fatalf("a takes the free lease: %v %v", ok, err)
	}
	for _, id := range []string{"r1", "r2", "r3"} {
		must(t, d.InsertRun(ctx, &engine.Run{ID: id, Hook: "h", Status: engine.StatusQueued, QueuedAt: t0}))
	}
	releaseAll(t, d)
	must(t, d.Heartbeat(ctx, "w", 2, "v1"))
	must(t, d.Heartbeat(ctx, "s", 1, "v1"))
	if rw, err := d.ClaimRuns(ctx, "w", 2); err != nil || len(rw) != 2 {
		t.Fatalf("w claims %v %v", runIDs(rw), err)
	}
	if rs, err := d.ClaimRuns(ctx, "s", 1); err != nil || len(rs) != 1 {
		t.Fatalf("s claims %v %v", runIDs(rs), err)
	}
	return d, a, b, lockA
}

// TestFollowOnce: a run a restarted node recovers, or the scheduler
// expires, is owed its follow-up from the transaction that interrupts it;
// the follow-up a scheduler stores for it (a pending rerun or retry)
// lands once, with the run owed nothing more, and only while the
// scheduler holds the lease: a second Follow of the run, or one by a
// node without the lease (a deposed scheduler's late write), stores
// nothing.
func TestFollowOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, a, b, lockA := claimedThree(ctx, t)
	owed := func() []string {
		t.Helper()
		runs, err := a.Owed(ctx)
		must(t, err)
		return runIDs(runs)
	}
	if got := owed(); len(got) != 0 {
		t.Fatalf("runs owed before any is interrupted: %v", got)
	}
	recovered, err := d.RecoverNode(ctx, "w", t0)
	must(t, err)
	if got := owed(); !slices.Equal(got, runIDs(recovered)) || len(got) != 2 {
		t.Fatalf("owed after w's recovery %v, want its runs %v", got, runIDs(recovered))
	}
	if _, err := d.pool.Exec(ctx, `UPDATE nodes SET heartbeat_at = now() - interval '1 hour' WHERE name = 's'`); err != nil {
		t.Fatal(err) // s falls silent
	}
	expired, err := d.ExpireNodes(ctx, time.Minute, t0)
	must(t, err)
	if len(expired) != 1 || expired[0].ID != "r3" {
		t.Fatalf("expired %v, want s's run r3", runIDs(expired))
	}
	if got := owed(); !slices.Equal(got, []string{"r1", "r2", "r3"}) {
		t.Fatalf("owed after s expired %v, want r1 r2 r3", got)
	}

	rerun := &engine.PendingRerun{RunID: "x1", Hook: "h", Interrupted: "r1", PlannedAt: t0}
	if err := b.Follow(ctx, "r1", nil, rerun); !errors.Is(err, engine.ErrLeaseLost) {
		t.Errorf("Follow by b, which never held the lease: %v, want ErrLeaseLost", err)
	}
	must(t, a.Follow(ctx, "r1", nil, rerun))
	again := &engine.PendingRerun{RunID: "x2", Hook: "h", Interrupted: "r1", PlannedAt: t0}
	if err := a.Follow(ctx, "r1", nil, again); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a second Follow of r1: %v, want ErrNotFound", err)
	}
	if p, err := d.PendingReruns(ctx); err != nil || len(p) != 1 || p[0].RunID != "x1" {
		t.Errorf("pending reruns %+v %v, want x1 alone", p, err)
	}
	must(t, a.Follow(ctx, "r3", nil, nil)) // nothing follows r3
	if got := owed(); !slices.Equal(got, []string{"r2"}) {
		t.Fatalf("owed after r1 and r3 were followed: %v, want r2", got)
	}

	// The lease moves to b; a, which has not noticed, stores nothing.
	must(t, lockA.Unlock())
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, ok, err := b.Lead(ctx); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b never took the lease of dead a")
		}
	}
	retry := &engine.PendingRetry{RetryPlan: engine.RetryPlan{RunID: "y1", Attempt: 2, At: t0}, Hook: "h", RetryOf: "r2", Attempts: 3}
	if err := a.Follow(ctx, "r2", retry, nil); !errors.Is(err, engine.ErrLeaseLost) {
		t.Errorf("Follow by deposed a: %v, want ErrLeaseLost", err)
	}
	if p, err := d.PendingRetries(ctx); err != nil || len(p) != 0 {
		t.Errorf("pending retries after a's stale Follow: %+v %v", p, err)
	}
	if got := owed(); !slices.Equal(got, []string{"r2"}) {
		t.Fatalf("owed after a's stale Follow: %v, want r2", got)
	}
	must(t, b.Follow(ctx, "r2", retry, nil))
	if p, err := d.PendingRetries(ctx); err != nil || len(p) != 1 || p[0].RunID != "y1" {
		t.Errorf("pending retries %+v %v, want y1", p, err)
	}
	if got := owed(); len(got) != 0 {
		t.Errorf("owed at the end: %v", got)
	}
}

// lockNodes takes the node locks of names, as their daemons hold them,
// until t ends (a test may unlock one before: its process died).
func lockNodes(ctx context.Context, t *testing.T, url string, names ...string) []*DaemonLock {
	t.Helper()
	var locks []*DaemonLock
	for _, name := range names {
		l, err := LockNode(ctx, url, name)
		must(t, err)
		t.Cleanup(func() { l.Unlock() })
		locks = append(locks, l)
	}
	return locks
}
