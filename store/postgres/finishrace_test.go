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

// claimOn queues run id of hook h and has node claim it.
func claimOn(t *testing.T, d *DB, node, id, h string) *engine.Run {
	t.Helper()
	ctx := context.Background()
	must(t, d.InsertRun(ctx, &engine.Run{ID: id, Hook: h, Status: engine.StatusQueued, QueuedAt: t0}))
	if _, err := d.pool.Exec(ctx, `UPDATE runs SET claimable = true WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	runs, err := d.ClaimRuns(ctx, node, 1)
	must(t, err)
	if len(runs) != 1 || runs[0].ID != id {
		t.Fatalf("%s claimed %v, want %s", node, runIDs(runs), id)
	}
	return runs[0]
}

// TestFinishWhileExpired: a node finishing a run while the scheduler
// declares the node silent: the expiry and the finish exclude each other.
// First deterministically: an expiry holding the run's row (its UPDATE
// not committed yet) makes the finish wait, and once it commits the
// finish changes nothing (before, the finish checked the run was still
// running, then overwrote the interrupted record). Then 40 runs raced by
// the real ExpireNodes and FinishRunOn: each is either interrupted and
// returned by the expiry, or finished, never both.
func TestFinishWhileExpired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d, other := open(t, url), open(t, url)
	must(t, d.Heartbeat(ctx, "a", 4, ""))
	r := claimOn(t, d, "a", "r0", "h")

	tx, err := other.pool.Begin(ctx)
	must(t, err)
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE runs SET status = 'interrupted', reason = $2 WHERE id = $1 AND status = 'running'`,
		r.ID, InterruptedByTimeout); err != nil {
		t.Fatal(err)
	}
	finished := make(chan error, 1)
	go func() {
		fin := *r
		fin.Status, fin.FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
		finished <- d.FinishRunOn(ctx, "a", &fin)
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		must(t, other.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE runs SET%'`).Scan(&waiting))
		if waiting == 1 {
			break
		}
		select {
		case err := <-finished:
			t.Fatalf("the finish did not wait for the expiry holding the run: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the finish does not wait for the expiry within a minute")
		}
	}
	must(t, tx.Commit(ctx))
	if err := <-finished; !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("finish after the expiry committed: %v, want ErrNotFound", err)
	}
	if got, _ := d.GetRun(ctx, r.ID); got.Status != engine.StatusInterrupted {
		t.Errorf("run %s is %s after the expiry and a late finish, want interrupted", r.ID, got.Status)
	}

	// The real functions, raced.
	const n = 40
	must(t, d.Heartbeat(ctx, "b", n, ""))
	var runs []*engine.Run
	for i := range n {
		runs = append(runs, claimOn(t, d, "b", fmt.Sprintf("s%02d", i), fmt.Sprintf("h%02d", i)))
	}
	if _, err := d.pool.Exec(ctx, `UPDATE nodes SET heartbeat_at = now() - interval '1 hour' WHERE name = 'b'`); err != nil {
		t.Fatal(err)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		expired  = map[string]bool{}
		finishes = map[string]bool{}
	)
	for i, r := range runs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			fin := *r
			fin.Status, fin.FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
			err := other.FinishRunOn(ctx, "b", &fin)
			if err != nil && !errors.Is(err, engine.ErrNotFound) {
				t.Error(err)
			}
			mu.Lock()
			finishes[r.ID] = err == nil
			mu.Unlock()
		}()
		go func() {
			defer wg.Done()
			if i%4 != 0 {
				return // an expiry per four finishes: the expiries overlap the finishes
			}
			got, err := d.ExpireNodes(ctx, time.Minute, t0.Add(2*time.Second))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			for _, e := range got {
				if expired[e.ID] {
					t.Errorf("run %s expired twice", e.ID)
				}
				expired[e.ID] = true
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	// What the race left running is expired now.
	rest, err := d.ExpireNodes(ctx, time.Minute, t0.Add(3*time.Second))
	must(t, err)
	for _, e := range rest {
		expired[e.ID] = true
	}
	raced := 0
	for _, r := range runs {
		got, err := d.GetRun(ctx, r.ID)
		must(t, err)
		switch {
		case expired[r.ID] && finishes[r.ID]:
			t.Errorf("run %s both interrupted by the expiry and finished (now %s)", r.ID, got.Status)
		case expired[r.ID] && got.Status != engine.StatusInterrupted, finishes[r.ID] && got.Status != engine.StatusCompleted:
			t.Errorf("run %s: expired %v, finished %v, status %s", r.ID, expired[r.ID], finishes[r.ID], got.Status)
		case !expired[r.ID] && !finishes[r.ID]:
			t.Errorf("run %s neither expired nor finished: %s", r.ID, got.Status)
		}
		if expired[r.ID] {
			raced++
		}
	}
	t.Logf("%d of %d runs interrupted, the others finished", raced, n)
}

// TestExpireLocksRunsOldestFirst: ExpireNodes (and RecoverNode) lock the
// runs they interrupt oldest first, whatever order the plan visits them
// in, so two of them, or one and a transaction taking runs in that order,
// never wait for each other in a cycle. Run r1 is older than r2 but lies
// after it in the table and its indexes (an update of an indexed column
// gave it a new place), where a scan meets it second. Another transaction
// holds r1; the expiry must wait for it holding nothing, so that this
// transaction can then take r2 too. An expiry that took r2 first, by its
// plan's order, deadlocks with it (as ExpireNodes did before it locked
// the runs first).
func TestExpireLocksRunsOldestFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d, other := open(t, url), open(t, url)
	must(t, d.Heartbeat(ctx, "a", 4, ""))
	r1, r2 := claimOn(t, d, "a", "r1", "h1"), claimOn(t, d, "a", "r2", "h2")
	if _, err := d.pool.Exec(ctx, `UPDATE runs SET queued_at = queued_at + 1 WHERE id = $1`, r1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.pool.Exec(ctx, `UPDATE nodes SET heartbeat_at = now() - interval '1 hour' WHERE name = 'a'`); err != nil {
		t.Fatal(err)
	}

	tx, err := other.pool.Begin(ctx)
	must(t, err)
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, r1.ID); err != nil {
		t.Fatal(err)
	}
	type result struct {
		runs []*engine.Run
		err  error
	}
	expired := make(chan result, 1)
	go func() {
		runs, err := d.ExpireNodes(ctx, time.Minute, t0.Add(time.Second))
		expired <- result{runs, err}
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		must(t, other.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> pg_backend_pid()`).Scan(&waiting))
		if waiting == 1 {
			break
		}
		select {
		case res := <-expired:
			t.Fatalf("the expiry did not wait for the run held by another transaction: %v %v", runIDs(res.runs), res.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the expiry does not wait for the held run within a minute")
		}
	}
	// The other transaction takes r2 as well, in the same order: the
	// expiry holds nothing yet.
	if _, err := tx.Exec(ctx, `UPDATE runs SET reason = 'taken' WHERE id = $1`, r2.ID); err != nil {
		t.Fatalf("take r2 while the expiry waits for r1: %v", err)
	}
	must(t, tx.Commit(ctx))
	res := <-expired
	if res.err != nil {
		t.Fatalf("expiry: %v", res.err)
	}
	if got := runIDs(res.runs); len(got) != 2 || got[0] != r1.ID || got[1] != r2.ID {
		t.Errorf("expired %v, want [%s %s]", got, r1.ID, r2.ID)
	}
}
