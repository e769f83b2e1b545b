package store

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"testing"

	"github.com/hookd/hookd/engine"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// tableLog observes the write connection: the tables whose rows each
// committed transaction inserted, updated or deleted (SQLite's update
// hook, which reports rowid tables, not their indexes).
type tableLog struct {
	mu      sync.Mutex
	pending []string
	commits [][]string
}

var (
	tablesWritten    = &tableLog{}
	registerTableLog sync.Once
)

// observeTables makes Open use a driver that feeds tablesWritten, for the
// rest of the test.
func observeTables(t *testing.T) *tableLog {
	registerTableLog.Do(func() {
		sql.Register("sqlite3_tables", &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
			c.RegisterUpdateHook(func(op int, db, table string, rowid int64) {
				tablesWritten.mu.Lock()
				if !slices.Contains(tablesWritten.pending, table) {
					tablesWritten.pending = append(tablesWritten.pending, table)
				}
				tablesWritten.mu.Unlock()
			})
			c.RegisterCommitHook(func() int {
				tablesWritten.mu.Lock()
				tablesWritten.commits = append(tablesWritten.commits, tablesWritten.pending)
				tablesWritten.pending = nil
				tablesWritten.mu.Unlock()
				return 0
			})
			return nil
		}})
	})
	old := writeDriver
	writeDriver = "sqlite3_tables"
	t.Cleanup(func() { writeDriver = old })
	tablesWritten.mu.Lock()
	tablesWritten.pending, tablesWritten.commits = nil, nil
	tablesWritten.mu.Unlock()
	return tablesWritten
}

// since returns the tables each commit after the first n wrote.
func (l *tableLog) since(n int) [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.commits[n:])
}

func (l *tableLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.commits)
}

// TestFinishRunWritesOnlyTheRun: a run's end writes its row in runs and
// nothing in hook_state (one page less in every run's last commit), and
// the hook's last status still follows the run, read from it.
func TestFinishRunWritesOnlyTheRun(t *testing.T) {
	ctx := context.Background()
	log := observeTables(t)
	d, _ := openTest(t)
	r := &engine.Run{ID: "r1", Hook: "h", Trigger: "event", QueuedAt: t0, StartedAt: t0}
	mustRun(t, d.StartRun(ctx, r))
	n := log.count()

	r.Status, r.FinishedAt = engine.StatusFailed, t0.Add(1e9)
	mustRun(t, d.FinishRun(ctx, r))
	finish := log.since(n)
	if len(finish) == 0 {
		t.Fatal("FinishRun committed nothing the update hook saw")
	}
	if got := finish[0]; !slices.Equal(got, []string{"runs"}) {
		t.Errorf("FinishRun's commit wrote %v, want [runs]", got)
	}
	for _, c := range finish {
		if slices.Contains(c, "hook_state") {
			t.Errorf("a commit after the start wrote hook_state: %v", c)
		}
	}
	states, err := d.HookStates(ctx)
	mustRun(t, err)
	want := engine.HookState{Hook: "h", LastStart: t0, LastRunID: "r1", LastStatus: engine.StatusFailed}
	if got := states["h"]; got != want {
		t.Errorf("hook state\n got %+v\nwant %+v", got, want)
	}
}

// TestHookStateOfAGoneRun: when the run hook_state names is gone (deleted
// by hand: Prune keeps each hook's latest start), HookStates falls back
// to the status stored with its start, and still lists the hook.
func TestHookStateOfAGoneRun(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	r := &engine.Run{ID: "r1", Hook: "h", QueuedAt: t0, StartedAt: t0}
	mustRun(t, d.StartRun(ctx, r))
	r.Status, r.FinishedAt = engine.StatusCompleted, t0.Add(1e9)
	mustRun(t, d.FinishRun(ctx, r))
	if _, err := d.w.ExecContext(ctx, `DELETE FROM runs WHERE id = 'r1'`); err != nil {
		t.Fatal(err)
	}
	states, err := d.HookStates(ctx)
	mustRun(t, err)
	want := engine.HookState{Hook: "h", LastStart: t0, LastRunID: "r1", LastStatus: engine.StatusRunning}
	if got := states["h"]; got != want {
		t.Errorf("hook state\n got %+v\nwant %+v", got, want)
	}
}

// TestRecoverInterruptedWritesOnlyRuns: recovery marks the runs left
// running interrupted and writes nothing in hook_state (whose stored
// status every started hook has as "running" since a run's end stopped
// writing it: an update there would rewrite every hook's row at each
// start-up); the hooks' last statuses follow their runs.
func TestRecoverInterruptedWritesOnlyRuns(t *testing.T) {
	ctx := context.Background()
	log := observeTables(t)
	d, _ := openTest(t)
	mustRun(t, d.StartRun(ctx, &engine.Run{ID: "a1", Hook: "a", StartedAt: t0}))
	done := &engine.Run{ID: "c1", Hook: "c", StartedAt: t0}
	mustRun(t, d.StartRun(ctx, done))
	done.Status, done.FinishedAt = engine.StatusCompleted, t0.Add(1e9)
	mustRun(t, d.FinishRun(ctx, done))
	n := log.count()

	runs, err := d.RecoverInterrupted(ctx, t0.Add(2e9))
	mustRun(t, err)
	if len(runs) != 1 || runs[0].ID != "a1" {
		t.Fatalf("RecoverInterrupted = %v, want [a1]", runs)
	}
	// The commits since: recovery's, and any of the background indexer,
	// which writes only its own tables.
	wroteRuns := false
	for _, c := range log.since(n) {
		if slices.Contains(c, "hook_state") {
			t.Errorf("a commit of the recovery wrote hook_state: %v", c)
		}
		wroteRuns = wroteRuns || slices.Contains(c, "runs")
	}
	if !wroteRuns {
		t.Error("no commit the update hook saw wrote runs")
	}
	states, err := d.HookStates(ctx)
	mustRun(t, err)
	if st := states["a"].LastStatus; st != engine.StatusInterrupted {
		t.Errorf("hook a's last status %q, want interrupted", st)
	}
	if st := states["c"].LastStatus; st != engine.StatusCompleted {
		t.Errorf("hook c's last status %q, want completed", st)
	}
}
