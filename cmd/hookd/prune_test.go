package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

const pruneSettings = `retention:
  runs: 30d
  keep_last: 2
  events: 7d
  skipped: 3d
`

// manualHook is a steps-only hook fired by hand.
const manualHook = `steps:
  - type: shell
    command: "true"
skip_llm: true
`

// seedHistory writes old records straight into the database, as weeks
// of a daemon's work would have left them: n completed runs of each hook
// 40 days old, skip records of hook a 5 days old, and events 10 days
// old. The daemon may be running: SQLite serializes the writes.
func seedHistory(t *testing.T, e *env, n int, hooks ...string) {
	t.Helper()
	db, err := store.Open(e.path(".hookd/hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	old := time.Now().Add(-40 * 24 * time.Hour)
	for i := range n {
		for _, h := range hooks {
			at := old.Add(time.Duration(i) * time.Minute)
			r := &engine.Run{ID: engine.NewID(), Hook: h, Trigger: "manual", Status: engine.StatusCompleted,
				QueuedAt: at, StartedAt: at, FinishedAt: at}
			if err := db.InsertRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	skipAt := time.Now().Add(-5 * 24 * time.Hour)
	for i := range 4 {
		r := &engine.Run{ID: engine.NewID(), Hook: "a", Trigger: "manual", Status: engine.StatusSkipped,
			Gate: engine.GateCooldown, Reason: fmt.Sprintf("cooldown: %ds left", i), QueuedAt: skipAt, FinishedAt: skipAt}
		if err := db.InsertRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if err := db.AppendEvent(ctx, &engine.Event{Type: "old.thing", Source: "cli", Time: time.Now().Add(-10 * 24 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPruneCommand: `hookd prune` with no daemon prunes in-process, by
// the retention of hookd.yaml and of each hook (b keeps its runs
// forever); --dry-run counts and deletes nothing. With a daemon running
// it prunes through it, and `hookd status` and /metrics show it.
func TestPruneCommand(t *testing.T) {
	e := newEnv(t, pruneSettings, map[string]string{
		"a.yaml": manualHook,
		"b.yaml": manualHook + "retention:\n  runs: 0\n",
	})
	seedHistory(t, e, 10, "a", "b")

	r := e.must(0, "prune", "--dry-run")
	if want := "would delete 8 runs, 4 skip/drop records, 3 events"; !strings.Contains(r.stdout, want) {
		t.Errorf("dry run: want %q in:\n%s", want, r)
	}
	if n := len(e.listRuns("a", "--limit", "100")); n != 14 {
		t.Fatalf("the dry run deleted runs: a has %d records, want 14", n)
	}
	r = e.must(0, "prune")
	if want := "deleted 8 runs, 4 skip/drop records, 3 events"; !strings.Contains(r.stdout, want) {
		t.Errorf("prune: want %q in:\n%s", want, r)
	}
	if n := len(e.listRuns("a", "--limit", "100")); n != 2 {
		t.Errorf("a has %d runs after the prune, want its keep_last 2", n)
	}
	if n := len(e.listRuns("b", "--limit", "100")); n != 10 {
		t.Errorf("b (runs: 0) has %d runs after the prune, want all 10", n)
	}

	d := e.serve()
	seedHistory(t, e, 3, "a")
	r = e.must(0, "prune")
	if want := "deleted 3 runs, 4 skip/drop records, 3 events"; !strings.Contains(r.stdout, want) {
		t.Errorf("prune through the daemon: want %q in:\n%s", want, r)
	}
	d.waitLog("pruned history")
	st := e.must(0, "status")
	for _, want := range []string{"database:", "pruned:", "3 runs, 4 skip/drop records, 3 events"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, st)
		}
	}
	fams := e.socketClient().scrape()
	for kind, want := range map[string]float64{"runs": 3, "skipped": 4, "events": 3} {
		if got := metricValue(fams, "hookd_pruned_rows_total", "kind", kind); got != want {
			t.Errorf("hookd_pruned_rows_total{kind=%q} = %v, want %v", kind, got, want)
		}
	}
	d.signal(syscall.SIGTERM)
	d.wait()
}

// TestBackgroundPrune: the daemon prunes on its own, every retention.every.
func TestBackgroundPrune(t *testing.T) {
	e := newEnv(t, pruneSettings+"  every: 1s\n", map[string]string{"a.yaml": manualHook})
	seedHistory(t, e, 5, "a")
	d := e.serve()
	d.waitLog("pruned history")
	waitFor(t, "old runs to go", func() bool { return len(e.listRuns("a", "--limit", "100")) == 2 }, func() string {
		return d.log.String()
	})
	// The last prune may be a later one that found nothing left.
	if st := e.must(0, "status"); !strings.Contains(st.stdout, "pruned:") || strings.Contains(st.stdout, "not yet") {
		t.Errorf("status does not show the last prune:\n%s", st)
	}
}

// TestPausedSkipsCollapse: each fire of a paused hook is refused, and the
// refusals in a row are one record with a count and a time range.
func TestPausedSkipsCollapse(t *testing.T) {
	e := newEnv(t, "", map[string]string{"p.yaml": manualHook})
	e.serve()
	e.must(0, "pause", "p")
	for range 3 {
		e.must(exitRefused, "fire", "p")
	}
	runs := e.listRuns("p")
	if len(runs) != 1 || runs[0].Repeats != 3 || runs[0].Gate != engine.GatePaused {
		t.Fatalf("want one paused record that repeats 3 times, got %+v", runs)
	}
	if r := e.must(0, "runs", "p"); !strings.Contains(r.stdout, "3× from ") {
		t.Errorf("hookd runs does not show the count:\n%s", r)
	}
	if r := e.must(0, "run", runs[0].ID); !strings.Contains(r.stdout, "repeats:") {
		t.Errorf("hookd run does not show the count:\n%s", r)
	}
	e.must(0, "resume", "p")
	e.must(0, "fire", "p", "--wait")
	e.must(0, "pause", "p")
	e.must(exitRefused, "fire", "p")
	if runs := e.listRuns("p"); len(runs) != 3 || runs[0].Repeats != 0 {
		t.Errorf("a refusal after a run must start a new record; got %d records, newest repeats %d", len(runs), runs[0].Repeats)
	}
}

// TestOldDatabaseConvertedOnce: a database made without incremental
// vacuum (as every hookd before retention made them) is converted by one
// VACUUM when the daemon starts, and only the first time.
func TestOldDatabaseConvertedOnce(t *testing.T) {
	e := newEnv(t, "", map[string]string{"a.yaml": manualHook})
	if err := os.MkdirAll(e.path(".hookd"), 0o700); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", e.path(".hookd/hookd.db")+"?_auto_vacuum=none")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE made_before (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	d := e.serve()
	d.waitLog("database converted to incremental vacuum (once)")
	d.signal(syscall.SIGTERM)
	d.wait()
	d = e.serve()
	d.signal(syscall.SIGTERM)
	d.wait()
	if n := strings.Count(d.log.String(), "converted to incremental vacuum"); n != 0 {
		t.Errorf("the second start converted again:\n%s", d.log)
	}
	raw, err = sql.Open("sqlite3", e.path(".hookd/hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var mode int
	if err := raw.QueryRow("PRAGMA auto_vacuum").Scan(&mode); err != nil || mode != 2 {
		t.Errorf("auto_vacuum = %d (%v), want 2 (incremental)", mode, err)
	}
}
