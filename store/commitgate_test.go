package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// commitGate stops every commit of the write connection, while armed, in
// SQLite's commit hook — inside COMMIT, before it is durable — until the
// test lets it go on or makes it fail.
type commitGate struct {
	mu    sync.Mutex
	armed bool
	stop  chan struct{} // closed when the test ends: the hook lets go
	in    chan struct{} // a commit reached the hook
	out   chan bool     // let it commit (true) or make it fail (false)
}

var (
	gate         = &commitGate{in: make(chan struct{}), out: make(chan bool)}
	registerGate sync.Once
)

// gateCommits makes the DBs this test opens after it commit through gate
// (arm turns it on).
func gateCommits(t *testing.T) *commitGate {
	registerGate.Do(func() {
		sql.Register("sqlite3_gated", &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
			c.RegisterCommitHook(func() int {
				gate.mu.Lock()
				armed, stop := gate.armed, gate.stop
				gate.mu.Unlock()
				if !armed {
					return 0
				}
				select {
				case gate.in <- struct{}{}:
				case <-stop:
					return 0
				}
				select {
				case ok := <-gate.out:
					if !ok {
						return 1 // SQLite turns the COMMIT into a rollback
					}
				case <-stop:
				}
				return 0
			})
			return nil
		}})
	})
	old := writeDriver
	writeDriver = "sqlite3_gated"
	t.Cleanup(func() { writeDriver = old })
	return gate
}

// arm makes commits stop in the hook (on) or pass. Armed, the gate lets
// go when the test ends — before its DB closes, were the test to fail
// while a commit waits.
func (g *commitGate) arm(t *testing.T, on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = on
	if on && g.stop == nil {
		stop := make(chan struct{})
		g.stop = stop
		t.Cleanup(func() {
			g.mu.Lock()
			g.armed, g.stop = false, nil
			g.mu.Unlock()
			close(stop)
		})
	}
}

// reached waits for a commit to reach the hook.
func (g *commitGate) reached(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.in:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s never reached COMMIT", what)
	}
}

// noAnswer fails if any of the writes was answered while their commit is
// held in the hook. A correct committer cannot answer then; one that
// answered before its commit would have done so already — the short wait
// only gives its answer time to arrive.
func noAnswer(t *testing.T, res []chan error) {
	t.Helper()
	deadline := time.After(100 * time.Millisecond)
	for {
		for i, ch := range res {
			select {
			case err := <-ch:
				t.Fatalf("write %d was answered (%v) while its commit was not done", i, err)
			default:
			}
		}
		select {
		case <-deadline:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// A caller of a group commit is answered only once the commit holding its
// write returned: while COMMIT is held inside SQLite, no caller of the
// batch has its answer.
func TestGroupCommitAnswersAfterCommit(t *testing.T) {
	g := gateCommits(t)
	d, _ := openTest(t)
	release := holdCommitter(t, d)
	res := queueWrites(t, d, context.Background(), insertFn(d, "a"), insertFn(d, "b"), insertFn(d, "c"))
	g.arm(t, true)
	held := make(chan error, 1)
	go func() { held <- release() }()
	g.reached(t, "the holder's write")
	noAnswer(t, res)
	g.out <- true
	if err := waitResult(t, "holder", held); err != nil {
		t.Fatal(err)
	}
	g.reached(t, "the batch of a, b and c")
	noAnswer(t, res)
	g.out <- true
	for i, ch := range res {
		if err := waitResult(t, "write", ch); err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	g.arm(t, false)
	if got := storedEvents(t, d); !got["a"] || !got["b"] || !got["c"] {
		t.Errorf("stored %v, want a, b and c", got)
	}
}

// A COMMIT that fails fails every write of its batch, and stores none:
// no caller is told its write is stored when it is not.
func TestGroupCommitFailedCommitFailsEveryWrite(t *testing.T) {
	g := gateCommits(t)
	d, _ := openTest(t)
	release := holdCommitter(t, d)
	res := queueWrites(t, d, context.Background(), insertFn(d, "a"), insertFn(d, "b"))
	g.arm(t, true)
	held := make(chan error, 1)
	go func() { held <- release() }()
	g.reached(t, "the holder's write")
	g.out <- true
	if err := waitResult(t, "holder", held); err != nil {
		t.Fatal(err)
	}
	g.reached(t, "the batch of a and b")
	g.out <- false
	for i, ch := range res {
		if err := waitResult(t, "write", ch); err == nil {
			t.Errorf("write %d: answered nil, but its commit failed", i)
		}
	}
	g.arm(t, false)
	if got := storedEvents(t, d); got["a"] || got["b"] {
		t.Errorf("stored %v after a failed commit, want neither a nor b", got)
	}
	// The committer goes on.
	if err := d.write(context.Background(), insertFn(d, "c")); err != nil {
		t.Fatal(err)
	}
	if got := storedEvents(t, d); !got["c"] {
		t.Errorf("stored %v, want c", got)
	}
}

// A write of a batch that SQLite refuses (a constraint) fails alone, with
// SQLite's error; the writes before and after it in the same commit are
// stored.
func TestGroupCommitConstraintFailsAlone(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	mustRun(t, d.StartRun(ctx, &engine.Run{ID: "taken", Hook: "h", Trigger: "event", StartedAt: t0}))
	release := holdCommitter(t, d)
	dupRun := func(ctx context.Context, tx *sql.Tx) error {
		if err := insertFn(d, "b")(ctx, tx); err != nil {
			return err
		}
		// The id is stored already: a UNIQUE constraint, after b's insert.
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, hook, status) VALUES ('taken', 'h', 'queued')`)
		return err
	}
	res := queueWrites(t, d, ctx, insertFn(d, "a"), dupRun, insertFn(d, "c"))
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := waitResult(t, "a", res[0]); err != nil {
		t.Errorf("a: %v", err)
	}
	if err := waitResult(t, "b", res[1]); !isConstraint(err) || !strings.Contains(err.Error(), "UNIQUE") {
		t.Errorf("b: %v, want SQLite's UNIQUE constraint error", err)
	}
	if err := waitResult(t, "c", res[2]); err != nil {
		t.Errorf("c: %v", err)
	}
	if got := storedEvents(t, d); !got["a"] || got["b"] || !got["c"] {
		t.Errorf("stored %v, want a and c (b rolled back with its savepoint)", got)
	}
}
