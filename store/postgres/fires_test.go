package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestFireRequests: a fire stored by a worker is decided once by the
// scheduler, oldest first; a request withdrawn before the scheduler took
// it is never decided; a withdraw while the scheduler decides waits for
// the answer and withdraws nothing; a request decide fails stays for
// later.
func TestFireRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	worker, sched := open(t, url).Member("w", 2, time.Minute), open(t, url).Member("s", 2, time.Minute)
	lead(ctx, t, sched)
	for _, id := range []string{"f1", "f2"} {
		must(t, worker.RequestFire(ctx, engine.FireRequest{ID: id, Hook: "h", Force: true, Node: "w"}))
	}
	if _, ok, err := worker.FireAnswer(ctx, "f1"); err != nil || ok {
		t.Fatalf("answer before the scheduler decided: %v %v", ok, err)
	}
	var seen []string
	decide := func(_ context.Context, req engine.FireRequest) (engine.FireAnswer, error) {
		seen = append(seen, req.ID)
		if (req.ID == "f1" || req.ID == "f2") && (!req.Force || req.Hook != "h" || req.Node != "w") {
			t.Errorf("request read back as %+v", req)
		}
		return engine.FireAnswer{Run: &engine.Run{ID: req.ID, Hook: req.Hook, Status: engine.StatusRunning}}, nil
	}
	n, err := sched.DecideFires(ctx, decide)
	must(t, err)
	if n != 2 || len(seen) != 2 || seen[0] != "f1" || seen[1] != "f2" {
		t.Fatalf("decided %d: %v, want f1 then f2", n, seen)
	}
	if n, err := sched.DecideFires(ctx, decide); err != nil || n != 0 {
		t.Errorf("decided again: %d %v", n, err)
	}
	a, ok, err := worker.FireAnswer(ctx, "f2")
	if err != nil || !ok || a.Run == nil || a.Run.ID != "f2" || a.Run.Status != engine.StatusRunning {
		t.Errorf("answer to f2: %+v %v %v", a, ok, err)
	}
	if w, err := worker.WithdrawFire(ctx, "f1"); err != nil || w {
		t.Errorf("withdrew an answered request: %v %v", w, err)
	}

	// Withdrawn first: never decided.
	must(t, worker.RequestFire(ctx, engine.FireRequest{ID: "f3", Hook: "h"}))
	if w, err := worker.WithdrawFire(ctx, "f3"); err != nil || !w {
		t.Fatalf("withdraw an undecided request: %v %v", w, err)
	}
	seen = nil
	if n, err := sched.DecideFires(ctx, decide); err != nil || n != 0 || len(seen) != 0 {
		t.Errorf("decided a withdrawn request: %d %v %v", n, seen, err)
	}
	if _, _, err := worker.FireAnswer(ctx, "f3"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("answer to a withdrawn request: %v, want ErrNotFound", err)
	}

	// Withdrawn while decided: the withdraw waits and finds the answer.
	must(t, worker.RequestFire(ctx, engine.FireRequest{ID: "f4", Hook: "h"}))
	deciding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := sched.DecideFires(ctx, func(ctx context.Context, req engine.FireRequest) (engine.FireAnswer, error) {
			close(deciding)
			<-release
			return decide(ctx, req)
		})
		done <- err
	}()
	<-deciding
	withdrew := make(chan bool, 1)
	go func() {
		w, err := worker.WithdrawFire(ctx, "f4")
		if err != nil {
			t.Error(err)
		}
		withdrew <- w
	}()
	// The withdraw waits on the request's row while it is decided.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		must(t, worker.db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM fires%'`).Scan(&waiting))
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the withdraw does not wait for the decision within a minute")
		}
	}
	close(release)
	must(t, <-done)
	if <-withdrew {
		t.Error("withdrew a request the scheduler was deciding")
	}
	if a, ok, err := worker.FireAnswer(ctx, "f4"); err != nil || !ok || a.Run == nil || a.Run.ID != "f4" {
		t.Errorf("answer to f4: %+v %v %v", a, ok, err)
	}

	// decide fails: the request stays, decided by a later call.
	must(t, worker.RequestFire(ctx, engine.FireRequest{ID: "f5", Hook: "h"}))
	if _, err := sched.DecideFires(ctx, func(context.Context, engine.FireRequest) (engine.FireAnswer, error) {
		return engine.FireAnswer{}, engine.ErrNotScheduler
	}); !errors.Is(err, engine.ErrNotScheduler) {
		t.Errorf("DecideFires with a failing decide: %v", err)
	}
	if _, ok, err := worker.FireAnswer(ctx, "f5"); err != nil || ok {
		t.Errorf("a failed decision answered: %v %v", ok, err)
	}
	if n, err := sched.DecideFires(ctx, decide); err != nil || n != 1 {
		t.Errorf("decided f5 later: %d %v", n, err)
	}
}

// TestMergeFire: a fire request merged into a pending run is recorded
// with the merge, in its transaction, while the request's row is held by
// the scheduler deciding it (no lock between the two); a merge into a run
// that is not queued stores nothing, the merge record included.
func TestMergeFire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	db := open(t, url)
	worker, sched := db.Member("w", 2, time.Minute), db.Member("s", 2, time.Minute)
	lead(ctx, t, sched)
	must(t, db.InsertRun(ctx, &engine.Run{ID: "p", Hook: "h", Status: engine.StatusQueued, Trigger: "manual", QueuedAt: time.Now()}))
	must(t, db.InsertRun(ctx, &engine.Run{ID: "done", Hook: "h", Status: engine.StatusSkipped, Trigger: "manual", QueuedAt: time.Now(), FinishedAt: time.Now()}))
	must(t, worker.RequestFire(ctx, engine.FireRequest{ID: "f1", Hook: "h", Node: "w"}))
	n, err := sched.DecideFires(ctx, func(ctx context.Context, req engine.FireRequest) (engine.FireAnswer, error) {
		p := &engine.Run{ID: "p", Hook: "h", Trigger: "manual", Reason: "pending: 1 coalesced", Event: []byte(`{"n":1}`)}
		if err := sched.MergeFire(ctx, p, req.ID); err != nil {
			return engine.FireAnswer{}, err
		}
		return engine.FireAnswer{Run: p}, nil
	})
	if err != nil || n != 1 {
		t.Fatalf("decide: %d %v", n, err)
	}
	if id, err := sched.FireMergedInto(ctx, "f1"); err != nil || id != "p" {
		t.Errorf("f1 merged into %q, %v; want p", id, err)
	}
	if r, err := db.GetRun(ctx, "p"); err != nil || string(r.Event) != `{"n": 1}` && string(r.Event) != `{"n":1}` {
		t.Errorf("merged run: %+v %v", r, err)
	}
	if err := sched.MergeFire(ctx, &engine.Run{ID: "done", Hook: "h"}, "f2"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("merge into a run that is not queued: %v; want ErrNotFound", err)
	}
	if id, err := sched.FireMergedInto(ctx, "f2"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a failed merge was recorded: %q %v", id, err)
	}
}

// lead makes m the scheduler: the lease is free.
func lead(ctx context.Context, t *testing.T, m *Member) {
	t.Helper()
	if node, ok, err := m.Lead(ctx); err != nil || !ok {
		t.Fatalf("%s takes the free lease: held by %q, %v", m.Node(), node, err)
	}
}

// TestDecideFiresFenced: a scheduler that loses the lease while it
// decides a fire request (another node took it over) does not answer:
// the request stays unanswered for the next scheduler, whose answer the
// requester then reads. Before, the deposed scheduler's answer committed
// (queued, or merged into a run) although its record of that run was
// refused, and the requester was told of a run that did not exist.
func TestDecideFiresFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	db := open(t, url)
	worker, a, b := db.Member("w", 2, time.Minute), db.Member("a", 2, time.Minute), db.Member("b", 2, time.Minute)
	if _, err := a.DecideFires(ctx, func(context.Context, engine.FireRequest) (engine.FireAnswer, error) {
		return engine.FireAnswer{}, nil
	}); err != nil {
		t.Fatalf("DecideFires with no request, without the lease: %v", err)
	}
	lead(ctx, t, a)
	must(t, worker.RequestFire(ctx, engine.FireRequest{ID: "f1", Hook: "h", Node: "w"}))
	answer := func(node string) func(context.Context, engine.FireRequest) (engine.FireAnswer, error) {
		return func(_ context.Context, req engine.FireRequest) (engine.FireAnswer, error) {
			return engine.FireAnswer{Run: &engine.Run{ID: "run-of-" + node, Hook: req.Hook, Status: engine.StatusQueued}}, nil
		}
	}
	n, err := a.DecideFires(ctx, func(ctx context.Context, req engine.FireRequest) (engine.FireAnswer, error) {
		// While a decides, its lease runs out and b takes it.
		if _, err := db.pool.Exec(ctx, `UPDATE leases SET expires_at = now() - interval '1 second' WHERE name = $1`, SchedulerLease); err != nil {
			return engine.FireAnswer{}, err
		}
		lead(ctx, t, b)
		return answer("a")(ctx, req)
	})
	if !errors.Is(err, engine.ErrLeaseLost) || n != 0 {
		t.Errorf("a decided after losing the lease: %d answered, %v; want 0 and ErrLeaseLost", n, err)
	}
	if got, ok, err := worker.FireAnswer(ctx, "f1"); err != nil || ok {
		t.Fatalf("the deposed scheduler's answer was stored: %+v %v %v", got, ok, err)
	}
	if n, err := b.DecideFires(ctx, answer("b")); err != nil || n != 1 {
		t.Fatalf("b decides the request a left: %d %v", n, err)
	}
	if got, ok, err := worker.FireAnswer(ctx, "f1"); err != nil || !ok || got.Run == nil || got.Run.ID != "run-of-b" {
		t.Errorf("answer to f1: %+v %v %v, want b's run", got, ok, err)
	}
}
