package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

func queued(id, hook string, slot time.Time) *engine.Run {
	return &engine.Run{ID: id, Hook: hook, Trigger: "schedule", Slot: slot, Status: engine.StatusQueued, QueuedAt: t0}
}

// TestSchedulerLease: of nodes racing for the lease one wins; the holder
// renews it with the same token; a release hands it over with the next
// token, and the old holder's fenced writes are refused from then on.
func TestSchedulerLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	handles := []*DB{open(t, url), open(t, url), open(t, url)}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []Lease
	)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, ok, err := handles[i%3].AcquireLease(ctx, SchedulerLease, fmt.Sprintf("node%d", i), time.Hour)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				winners = append(winners, l)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d nodes hold the lease: %+v", len(winners), winners)
	}
	a := winners[0]
	d := handles[0]
	renewed, ok, err := d.AcquireLease(ctx, SchedulerLease, a.Holder, time.Hour)
	if err != nil || !ok || renewed.Token != a.Token {
		t.Fatalf("renewal: %+v ok=%v err=%v, want token %d", renewed, ok, err, a.Token)
	}
	other, ok, err := d.AcquireLease(ctx, SchedulerLease, "late", time.Hour)
	if err != nil || ok || other.Holder != a.Holder {
		t.Fatalf("a late node got %+v ok=%v err=%v; want refused, naming %s", other, ok, err, a.Holder)
	}
	must(t, d.EnqueueFenced(ctx, a, queued("r1", "h", t0)))

	must(t, d.ReleaseLease(ctx, a))
	b, ok, err := d.AcquireLease(ctx, SchedulerLease, "late", time.Hour)
	if err != nil || !ok || b.Token != a.Token+1 {
		t.Fatalf("after release: %+v ok=%v err=%v, want token %d", b, ok, err, a.Token+1)
	}
	// Fencing: the old holder fires nothing more.
	err = d.EnqueueFenced(ctx, a, queued("r2", "h", t0.Add(time.Minute)))
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("enqueue with the old token: %v, want ErrLeaseLost", err)
	}
	if _, err := d.GetRun(ctx, "r2"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("the refused run was stored: %v", err)
	}
	if err := d.StartRun(ctx, &engine.Run{ID: "probe", Hook: "h", Slot: t0.Add(time.Minute), StartedAt: t0}); err != nil {
		t.Errorf("the refused run's slot was claimed: %v", err)
	}
	// The new holder fires; a slot fires once whoever claims it.
	must(t, d.EnqueueFenced(ctx, b, queued("r3", "h", t0.Add(2*time.Minute))))
	if err := handles[1].EnqueueFenced(ctx, b, queued("r4", "h", t0)); !errors.Is(err, engine.ErrSlotTaken) {
		t.Errorf("enqueue of a slot fired before: %v, want ErrSlotTaken", err)
	}
}

// TestLeaseExpires: a holder that stops renewing loses the lease after its
// ttl, on the database's clock; the next holder gets the next token and
// the old one's writes are refused.
func TestLeaseExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	a, ok, err := d.AcquireLease(ctx, SchedulerLease, "a", 200*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	var b Lease
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if b, ok, err = d.AcquireLease(ctx, SchedulerLease, "b", time.Hour); err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease of a did not expire within a minute: %+v", b)
		}
	}
	if b.Token != a.Token+1 || b.Holder != "b" {
		t.Errorf("taken over: %+v, want holder b token %d", b, a.Token+1)
	}
	if err := d.EnqueueFenced(ctx, a, queued("r1", "h", t0)); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("enqueue by the expired holder: %v, want ErrLeaseLost", err)
	}
	if _, ok, _ := d.AcquireLease(ctx, SchedulerLease, "a", time.Hour); ok {
		t.Error("the expired holder renewed a lease that b holds")
	}
}

// TestClaimRunsOnce: nodes claiming from one queue at once (FOR UPDATE
// SKIP LOCKED) claim every run exactly once.
func TestClaimRunsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	const n = 150
	for i := range n {
		must(t, d.InsertRun(ctx, &engine.Run{ID: fmt.Sprintf("q%03d", i), Hook: "h", Status: engine.StatusQueued, QueuedAt: t0}))
	}
	releaseAll(t, d)
	nodes := []*DB{open(t, url), open(t, url), open(t, url)}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		claimed = map[string][]string{} // run -> nodes that claimed it
	)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("node%d", i%3)
			for {
				runs, err := nodes[i%3].ClaimRuns(ctx, name, 4)
				if err != nil {
					t.Error(err)
					return
				}
				if len(runs) == 0 {
					return
				}
				mu.Lock()
				for _, r := range runs {
					claimed[r.ID] = append(claimed[r.ID], name)
					if r.Status != engine.StatusRunning || r.StartedAt.IsZero() {
						t.Errorf("claimed run %+v", r)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("%d of %d runs claimed", len(claimed), n)
	}
	for id, by := range claimed {
		if len(by) != 1 {
			t.Errorf("run %s claimed %d times: %v", id, len(by), by)
		}
	}
	if q, _ := d.QueuedRuns(ctx); len(q) != 0 {
		t.Errorf("%d runs still queued", len(q))
	}
}

// TestSilentNodeInterrupted: the runs of a node whose heartbeats stop are
// interrupted once its heartbeat is older than the timeout; a live node's
// runs are not; the silent node's late FinishRunOn changes nothing.
func TestSilentNodeInterrupted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	for i := range 4 {
		must(t, d.InsertRun(ctx, &engine.Run{ID: fmt.Sprintf("q%d", i), Hook: fmt.Sprintf("h%d", i), Status: engine.StatusQueued, QueuedAt: t0}))
	}
	releaseAll(t, d)
	must(t, d.Heartbeat(ctx, "a", 2, "v1"))
	must(t, d.Heartbeat(ctx, "b", 2, "v1"))
	ra, err := d.ClaimRuns(ctx, "a", 2)
	must(t, err)
	rb, err := d.ClaimRuns(ctx, "b", 2)
	must(t, err)
	if len(ra) != 2 || len(rb) != 2 {
		t.Fatalf("claimed %d and %d", len(ra), len(rb))
	}
	const timeout = 300 * time.Millisecond
	var expired []*engine.Run
	for deadline := time.Now().Add(time.Minute); len(expired) == 0; time.Sleep(20 * time.Millisecond) {
		must(t, d.Heartbeat(ctx, "b", 2, "v1")) // b stays alive; a is silent
		if expired, err = d.ExpireNodes(ctx, timeout, t0); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("a's runs not interrupted within a minute of its last heartbeat")
		}
	}
	if len(expired) != 2 || expired[0].ID != ra[0].ID || expired[1].ID != ra[1].ID {
		t.Fatalf("expired %v, want a's runs %s %s", runIDs(expired), ra[0].ID, ra[1].ID)
	}
	for _, r := range expired {
		if r.Status != engine.StatusInterrupted || r.Reason != InterruptedByTimeout {
			t.Errorf("expired run %+v", r)
		}
	}
	for _, r := range rb {
		if got, _ := d.GetRun(ctx, r.ID); got.Status != engine.StatusRunning {
			t.Errorf("live node b's run %s is %s", r.ID, got.Status)
		}
	}
	late := *ra[0]
	late.Status, late.FinishedAt = engine.StatusCompleted, t0
	if err := d.FinishRunOn(ctx, "a", &late); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("late finish by the silent node: %v, want ErrNotFound", err)
	}
	if got, _ := d.GetRun(ctx, late.ID); got.Status != engine.StatusInterrupted {
		t.Errorf("late finish changed the run to %s", got.Status)
	}
	fin := *rb[0]
	fin.Status, fin.FinishedAt = engine.StatusCompleted, t0
	must(t, d.FinishRunOn(ctx, "b", &fin))

	nodes, err := d.Nodes(ctx, timeout)
	must(t, err)
	if len(nodes) != 2 || nodes[0].Name != "a" || nodes[0].Alive || nodes[0].Running != 0 ||
		nodes[1].Name != "b" || nodes[1].Running != 1 || nodes[1].MaxConcurrent != 2 || nodes[1].HooksVersion != "v1" {
		t.Errorf("nodes %+v", nodes)
	}

	// A node restarted under its name recovers what it left running.
	rec, err := d.RecoverNode(ctx, "b", t0)
	must(t, err)
	if len(rec) != 1 || rec[0].ID != rb[1].ID || rec[0].Status != engine.StatusInterrupted {
		t.Errorf("RecoverNode(b) = %v, want %s", runIDs(rec), rb[1].ID)
	}
}

// TestListenWakes: a node listening for work is woken when a run is
// queued on another connection, once the queuing commits.
func TestListenWakes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := migrated.NewDatabase(t)
	listener, sched := open(t, url), open(t, url)
	wake, err := listener.Listen(ctx, ChannelWork)
	must(t, err)
	l, ok, err := sched.AcquireLease(ctx, SchedulerLease, "s", time.Hour)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	must(t, sched.EnqueueFenced(ctx, l, queued("r1", "triage", time.Time{})))
	select {
	case hook := <-wake:
		if hook != "triage" {
			t.Errorf("woken with %q, want the hook's name", hook)
		}
	case <-time.After(time.Minute):
		t.Fatal("no wake-up within a minute of the enqueue")
	}
	cancel()
	for range wake { // closed when ctx ends
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func runIDs(runs []*engine.Run) []string {
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}
