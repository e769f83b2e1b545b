package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// t0 is a fixed instant with nanoseconds, so round trips show truncation.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

func openTest(t testing.TB) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "hookd.db")
	d, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d, path
}

func mustRun(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fullRun is a run with every field set.
func fullRun(id string) *engine.Run {
	return &engine.Run{
		ID:        id,
		Hook:      "triage",
		Trigger:   "schedule",
		Slot:      t0.Add(-time.Hour),
		Status:    engine.StatusCompleted,
		Reason:    "",
		Event:     json.RawMessage(`{"env":"prod","n":3}`),
		EventType: "deploy.failed",
		Steps: []*engine.StepResult{{
			Index: 0, Name: "tests", Type: "run_tests", Output: "ok",
			ExitCode: new(0), Fields: map[string]any{"failures": []any{"a", "b"}},
			Started: t0, Duration: 1500 * time.Millisecond,
		}},
		Prompt:      "prompt",
		Response:    "response",
		ToolCalls:   json.RawMessage(`[{"name":"read_file","args":{"path":"x"}}]`),
		Tokens:      engine.Tokens{Prompt: 100, Completion: 20, Cached: 0, Known: true},
		Error:       "",
		Fingerprint: "sha256:abc",
		QueuedAt:    t0.Add(-2 * time.Second),
		StartedAt:   t0.Add(-time.Second),
		FinishedAt:  t0,
		Depth:       2,
	}
}

func TestRunRoundTrip(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func() *engine.Run
	}{
		{"full", func() *engine.Run { return fullRun("r1") }},
		{"tokens unknown", func() *engine.Run {
			r := fullRun("r1")
			r.Tokens = engine.Tokens{}
			return r
		}},
		{"tokens known zero", func() *engine.Run {
			r := fullRun("r1")
			r.Tokens = engine.Tokens{Known: true}
			return r
		}},
		{"minimal", func() *engine.Run {
			return &engine.Run{ID: "r1", Hook: "h", Status: engine.StatusCompleted, StartedAt: t0}
		}},
		{"failed", func() *engine.Run {
			r := fullRun("r1")
			r.Status, r.Error, r.Reason = engine.StatusFailed, "step 1: exit 2", "step_failed"
			return r
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := openTest(t)
			want := tt.run()
			start := *want
			start.Status = engine.StatusRunning
			start.FinishedAt = time.Time{}
			mustRun(t, d.StartRun(ctx, &start))
			mustRun(t, d.FinishRun(ctx, want))
			got, err := d.GetRun(ctx, want.ID)
			mustRun(t, err)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
			}
			for _, tm := range []time.Time{got.Slot, got.StartedAt, got.FinishedAt, got.QueuedAt} {
				if !tm.IsZero() && tm.Location() != time.UTC {
					t.Errorf("time %v not in UTC", tm)
				}
			}
		})
	}
}

func TestInsertRun(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		run      engine.Run
		wantErr  bool
		wantSlot time.Time // hook_state.last_slot afterwards
	}{
		{"queued", engine.Run{ID: "a", Hook: "h", Status: engine.StatusQueued, QueuedAt: t0}, false, time.Time{}},
		{"skipped with slot", engine.Run{ID: "a", Hook: "h", Status: engine.StatusSkipped, Reason: "cooldown", Slot: t0}, false, t0},
		{"dropped", engine.Run{ID: "a", Hook: "h", Status: engine.StatusDropped, Reason: "queue_full"}, false, time.Time{}},
		{"running refused", engine.Run{ID: "a", Hook: "h", Status: engine.StatusRunning}, true, time.Time{}},
		{"no status refused", engine.Run{ID: "a", Hook: "h"}, true, time.Time{}},
		{"no hook refused", engine.Run{ID: "a", Status: engine.StatusQueued}, true, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := openTest(t)
			r := tt.run
			err := d.InsertRun(ctx, &r)
			if (err != nil) != tt.wantErr {
				t.Fatalf("InsertRun: %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got, err := d.GetRun(ctx, r.ID)
			mustRun(t, err)
			if !reflect.DeepEqual(*got, r) {
				t.Errorf("got %+v\nwant %+v", *got, r)
			}
			states, err := d.HookStates(ctx)
			mustRun(t, err)
			st, ok := states["h"]
			if tt.wantSlot.IsZero() {
				if ok {
					t.Errorf("InsertRun without a slot created hook state %+v", st)
				}
				return
			}
			want := engine.HookState{Hook: "h", LastSlot: tt.wantSlot}
			if st != want {
				t.Errorf("hook state %+v, want %+v (InsertRun touches only last_slot)", st, want)
			}
			if err := d.InsertRun(ctx, &r); err == nil {
				t.Error("InsertRun of the same id twice succeeded")
			}
		})
	}
}

func checkState(t *testing.T, d *DB, want engine.HookState) {
	t.Helper()
	states, err := d.HookStates(context.Background())
	mustRun(t, err)
	if got := states[want.Hook]; got != want {
		t.Errorf("hook state\n got %+v\nwant %+v", got, want)
	}
}

func TestSlotClaim(t *testing.T) {
	ctx := context.Background()
	slot := t0
	tests := []struct {
		name  string
		first func(d *DB) error // claims slot for run "a"
	}{
		{"started", func(d *DB) error {
			return d.StartRun(ctx, &engine.Run{ID: "a", Hook: "h", Slot: slot, StartedAt: t0})
		}},
		{"skipped", func(d *DB) error {
			return d.InsertRun(ctx, &engine.Run{ID: "a", Hook: "h", Slot: slot, Status: engine.StatusSkipped, Reason: "cooldown"})
		}},
		{"queued", func(d *DB) error {
			return d.InsertRun(ctx, &engine.Run{ID: "a", Hook: "h", Slot: slot, Status: engine.StatusQueued})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := openTest(t)
			mustRun(t, tt.first(d))
			before := snapshot(t, d)

			err := d.StartRun(ctx, &engine.Run{ID: "b", Hook: "h", Slot: slot, StartedAt: t0.Add(time.Second)})
			if !errors.Is(err, engine.ErrSlotTaken) {
				t.Fatalf("second claim of the slot: %v, want ErrSlotTaken", err)
			}
			if want := "start run b: slot 2025-03-14T15:09:26.535897932Z of hook h is held by run a: engine: slot already fired"; err.Error() != want {
				t.Errorf("error:\n got %s\nwant %s", err, want)
			}
			if after := snapshot(t, d); !reflect.DeepEqual(before, after) {
				t.Errorf("refused StartRun changed the store:\nbefore %+v\nafter  %+v", before, after)
			}
			// The same slot of another hook is free, and the holder may start.
			mustRun(t, d.StartRun(ctx, &engine.Run{ID: "c", Hook: "other", Slot: slot, StartedAt: t0}))
			if tt.name == "queued" {
				mustRun(t, d.StartRun(ctx, &engine.Run{ID: "a", Hook: "h", Slot: slot, StartedAt: t0}))
			}
		})
	}
}

type storeSnapshot struct {
	Runs   []*engine.Run
	States map[string]engine.HookState
}

func snapshot(t *testing.T, d *DB) storeSnapshot {
	t.Helper()
	runs, err := d.ListRuns(context.Background(), engine.RunFilter{Limit: 1000})
	mustRun(t, err)
	states, err := d.HookStates(context.Background())
	mustRun(t, err)
	return storeSnapshot{runs, states}
}

func TestListRuns(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	// r00..r09 alternate hooks a and b; odd ones are skipped.
	for i := range 10 {
		r := &engine.Run{ID: fmt.Sprintf("r%02d", i), Hook: []string{"a", "b"}[i%2], Status: engine.StatusCompleted}
		if i%2 == 1 {
			r.Status = engine.StatusSkipped
		}
		mustRun(t, d.InsertRun(ctx, r))
	}
	tests := []struct {
		name    string
		f       engine.RunFilter
		want    []string
		wantErr error
	}{
		{"all", engine.RunFilter{}, []string{"r09", "r08", "r07", "r06", "r05", "r04", "r03", "r02", "r01", "r00"}, nil},
		{"limit", engine.RunFilter{Limit: 3}, []string{"r09", "r08", "r07"}, nil},
		{"hook", engine.RunFilter{Hook: "a"}, []string{"r08", "r06", "r04", "r02", "r00"}, nil},
		{"status", engine.RunFilter{Status: engine.StatusSkipped, Limit: 2}, []string{"r09", "r07"}, nil},
		{"before", engine.RunFilter{Before: "r05", Limit: 2}, []string{"r04", "r03"}, nil},
		{"hook before", engine.RunFilter{Hook: "b", Before: "r05"}, []string{"r03", "r01"}, nil},
		{"before oldest", engine.RunFilter{Before: "r00"}, nil, nil},
		{"unknown hook", engine.RunFilter{Hook: "zzz"}, nil, nil},
		{"unknown before", engine.RunFilter{Before: "zzz"}, nil, engine.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs, err := d.ListRuns(ctx, tt.f)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ListRuns: %v, want %v", err, tt.wantErr)
			}
			if got := runIDs(runs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ListRuns(%+v) = %v, want %v", tt.f, got, tt.want)
			}
		})
	}
}

func runIDs(runs []*engine.Run) []string {
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

func TestRecoverInterrupted(t *testing.T) {
	ctx := context.Background()
	d, path := openTest(t)
	mustRun(t, d.StartRun(ctx, &engine.Run{ID: "run1", Hook: "a", StartedAt: t0}))
	mustRun(t, d.StartRun(ctx, &engine.Run{ID: "run2", Hook: "b", StartedAt: t0}))
	mustRun(t, d.StartRun(ctx, &engine.Run{ID: "done", Hook: "c", StartedAt: t0}))
	mustRun(t, d.FinishRun(ctx, &engine.Run{ID: "done", Hook: "c", Status: engine.StatusCompleted, FinishedAt: t0}))
	mustRun(t, d.InsertRun(ctx, &engine.Run{ID: "queued", Hook: "d", Status: engine.StatusQueued}))
	mustRun(t, d.Close()) // "crash"

	d, err := Open(path)
	mustRun(t, err)
	defer d.Close()
	now := t0.Add(time.Hour)
	runs, err := d.RecoverInterrupted(ctx, now)
	mustRun(t, err)
	if got := runIDs(runs); !reflect.DeepEqual(got, []string{"run1", "run2"}) {
		t.Fatalf("RecoverInterrupted = %v, want [run1 run2]", got)
	}
	for _, r := range runs {
		stored, err := d.GetRun(ctx, r.ID)
		mustRun(t, err)
		if !reflect.DeepEqual(stored, r) {
			t.Errorf("returned %+v, stored %+v", r, stored)
		}
		if r.Status != engine.StatusInterrupted || r.Reason != InterruptedReason || !r.FinishedAt.Equal(now) || !r.StartedAt.Equal(t0) {
			t.Errorf("recovered run %+v", r)
		}
	}
	checkState(t, d, engine.HookState{Hook: "a", LastStart: t0, LastRunID: "run1", LastStatus: engine.StatusInterrupted})
	checkState(t, d, engine.HookState{Hook: "c", LastStart: t0, LastRunID: "done", LastStatus: engine.StatusCompleted})
	if q, _ := d.GetRun(ctx, "queued"); q.Status != engine.StatusQueued {
		t.Errorf("queued run recovered: %+v", q)
	}
	runs, err = d.RecoverInterrupted(ctx, now)
	if err != nil || len(runs) != 0 {
		t.Errorf("second RecoverInterrupted = %v, %v; want none", runIDs(runs), err)
	}
}

func isSlotTaken(err error) bool { return errors.Is(err, engine.ErrSlotTaken) }
