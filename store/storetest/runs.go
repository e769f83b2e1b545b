package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// fullRun is a run with every stored field set.
func fullRun(id string) *engine.Run {
	return &engine.Run{
		ID:        id,
		Hook:      "triage",
		Trigger:   "schedule",
		Slot:      t0.Add(-time.Hour),
		Status:    engine.StatusCompleted,
		Event:     json.RawMessage(`{"env":"prod","n":3}`),
		EventType: "deploy.failed",
		Steps: []*engine.StepResult{{
			Index: 0, Name: "tests", Type: "run_tests", Output: "ok",
			ExitCode: new(0), Count: new(2), Fields: map[string]any{"failures": []any{"a", "b"}},
			Started: t0, Duration: 1500 * time.Millisecond,
		}},
		Prompt:      "prompt",
		Response:    "response",
		ToolCalls:   json.RawMessage(`[{"name":"read_file","args":{"path":"x"}}]`),
		Tools:       []engine.ToolUse{{Name: "read_file"}},
		Notes:       []string{"a note"},
		Cause:       engine.CauseShortCircuit,
		Truncated:   true,
		CheckFailed: "tests",
		Tokens:      engine.Tokens{Prompt: 100, Completion: 20, Cached: 0, Known: true},
		Fingerprint: "sha256:abc",
		QueuedAt:    t0.Add(-2 * time.Second),
		StartedAt:   t0.Add(-time.Second),
		FinishedAt:  t0,
		Depth:       2,
		Project:     "proj",
		HookVersion: "sha256:v1",
		Attempt:     2,
		Attempts:    3,
		RetryOf:     "first",
		Retry:       &engine.RetryPlan{RunID: "next", Attempt: 3, At: t0.Add(time.Minute)},
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		TraceLinks:  engine.TraceLinks{Parents: []engine.TraceParent{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, Dropped: 2},
	}
}

func testRunRoundTrip(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	cases := []struct {
		name string
		run  func(id string) *engine.Run
	}{
		{"full", fullRun},
		{"tokens unknown", func(id string) *engine.Run {
			r := fullRun(id)
			r.Tokens = engine.Tokens{}
			return r
		}},
		{"tokens known zero", func(id string) *engine.Run {
			r := fullRun(id)
			r.Tokens = engine.Tokens{Known: true}
			return r
		}},
		{"fields repeating the output", func(id string) *engine.Run {
			r := fullRun(id)
			out := "Filesystem Size Used\n/dev/sda1 50G 48G\n"
			r.Steps = append(r.Steps, &engine.StepResult{Index: 1, Name: "df", Type: "shell", Output: out, ExitCode: new(0),
				Fields:  map[string]any{"stdout": out, "stderr": "", "command": "df -h", "containment": ""},
				Started: t0, Duration: time.Second})
			r.Slot = r.Slot.Add(2 * time.Minute)
			return r
		}},
		{"minimal", func(id string) *engine.Run {
			return &engine.Run{ID: id, Hook: "h", Status: engine.StatusCompleted, StartedAt: t0}
		}},
		{"failed", func(id string) *engine.Run {
			r := fullRun(id)
			r.Status, r.Error, r.Reason, r.Cause = engine.StatusFailed, "step 1: exit 2", "step_failed", engine.CauseStepFailed
			r.Slot = r.Slot.Add(time.Minute) // a slot of its own
			return r
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.run(fmt.Sprintf("r%d", i))
			if tc.name != "full" && tc.name != "failed" && tc.name != "fields repeating the output" {
				want.Slot = time.Time{}
			}
			start := *want
			start.Status = engine.StatusRunning
			start.FinishedAt = time.Time{}
			start.CheckFailed = "" // known once its steps ran: FinishRun stores it
			must(t, s.StartRun(ctx, &start))
			must(t, s.FinishRun(ctx, want))
			got, err := s.GetRun(ctx, want.ID)
			must(t, err)
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

func testTimesReadBackInUTC(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	loc := time.FixedZone("X", 5*3600)
	r := &engine.Run{ID: "r1", Hook: "h", Status: engine.StatusSkipped, QueuedAt: t0.In(loc), Slot: t0.In(loc)}
	must(t, s.InsertRun(ctx, r))
	got, err := s.GetRun(ctx, "r1")
	must(t, err)
	if !got.QueuedAt.Equal(t0) || got.QueuedAt.Location() != time.UTC || !got.Slot.Equal(t0) {
		t.Errorf("QueuedAt %v, Slot %v; want %v in UTC", got.QueuedAt, got.Slot, t0)
	}
}

func testGetRunNotFound(t *testing.T, e *env) {
	_, err := e.store().GetRun(context.Background(), "nope")
	if !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("GetRun of a missing run: %v, want ErrNotFound", err)
	}
}

// testNoteRun: NoteRun appends to a stored run's notes, those it ended
// with kept, on a run with other outcome fields and on one with none; it
// leaves the rest of the record as it was; an unknown run is ErrNotFound.
func testNoteRun(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	full := fullRun("noted")
	must(t, s.StartRun(ctx, &engine.Run{ID: full.ID, Hook: full.Hook, Trigger: full.Trigger, StartedAt: full.StartedAt}))
	must(t, s.FinishRun(ctx, full))
	bare := &engine.Run{ID: "bare", Hook: "h", Trigger: "manual", Status: engine.StatusCompleted, StartedAt: t0, FinishedAt: t0}
	must(t, s.StartRun(ctx, &engine.Run{ID: bare.ID, Hook: bare.Hook, Trigger: bare.Trigger, StartedAt: t0}))
	must(t, s.FinishRun(ctx, bare))

	must(t, s.NoteRun(ctx, "noted", "second"))
	must(t, s.NoteRun(ctx, "noted", "third"))
	must(t, s.NoteRun(ctx, "bare", "only"))

	got, err := s.GetRun(ctx, "noted")
	must(t, err)
	if want := []string{"a note", "second", "third"}; !reflect.DeepEqual(got.Notes, want) {
		t.Errorf("notes = %q, want %q", got.Notes, want)
	}
	if got.Cause != full.Cause || !got.Truncated || len(got.Tools) != 1 || got.Retry == nil || got.Response != full.Response {
		t.Errorf("NoteRun changed the rest of the record: %+v", got)
	}
	got, err = s.GetRun(ctx, "bare")
	must(t, err)
	if want := []string{"only"}; !reflect.DeepEqual(got.Notes, want) || got.Status != engine.StatusCompleted {
		t.Errorf("bare run: notes %q status %s, want %q completed", got.Notes, got.Status, want)
	}
	if err := s.NoteRun(ctx, "nope", "x"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("NoteRun of a missing run: %v, want ErrNotFound", err)
	}
}

func testInsertRun(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	cases := []struct {
		name     string
		run      engine.Run
		wantErr  bool
		wantSlot time.Time // the hook's last slot afterwards
	}{
		{"queued", engine.Run{Status: engine.StatusQueued, QueuedAt: t0}, false, time.Time{}},
		{"skipped with slot", engine.Run{Status: engine.StatusSkipped, Reason: "cooldown", Slot: t0}, false, t0},
		{"dropped", engine.Run{Status: engine.StatusDropped, Reason: "queue_full", Gate: engine.GateQueueFull}, false, time.Time{}},
		{"running refused", engine.Run{Status: engine.StatusRunning}, true, time.Time{}},
		{"no status refused", engine.Run{}, true, time.Time{}},
		{"no hook refused", engine.Run{Status: engine.StatusQueued}, true, time.Time{}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run
			r.ID = fmt.Sprintf("a%d", i)
			hook := fmt.Sprintf("h%d", i)
			if tc.name != "no hook refused" {
				r.Hook = hook
			}
			err := s.InsertRun(ctx, &r)
			if (err != nil) != tc.wantErr {
				t.Fatalf("InsertRun: %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil {
				if _, err := s.GetRun(ctx, r.ID); !errors.Is(err, engine.ErrNotFound) {
					t.Errorf("a refused run was stored: %v", err)
				}
				return
			}
			got, err := s.GetRun(ctx, r.ID)
			must(t, err)
			if !reflect.DeepEqual(*got, r) {
				t.Errorf("got %+v\nwant %+v", *got, r)
			}
			states, err := s.HookStates(ctx)
			must(t, err)
			st, ok := states[hook]
			if tc.wantSlot.IsZero() {
				if ok {
					t.Errorf("InsertRun without a slot created hook state %+v", st)
				}
				return
			}
			want := engine.HookState{Hook: hook, LastSlot: tc.wantSlot}
			if st != want {
				t.Errorf("hook state %+v, want %+v (InsertRun touches only the last slot)", st, want)
			}
			if err := s.InsertRun(ctx, &r); err == nil {
				t.Error("InsertRun of the same id twice succeeded")
			}
		})
	}
}

func testStartRunQueued(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	q := &engine.Run{ID: "q", Hook: "h", Trigger: "event", Status: engine.StatusQueued, QueuedAt: t0,
		Reason: "max_concurrent", Event: json.RawMessage(`{"a":1}`), EventType: "x"}
	must(t, s.InsertRun(ctx, q))
	must(t, s.InsertRun(ctx, &engine.Run{ID: "later", Hook: "h", Status: engine.StatusSkipped, Reason: "in_flight"}))

	r := *q
	r.Status, r.Reason, r.StartedAt = engine.StatusRunning, "", t0.Add(time.Second)
	r.QueuedAt = time.Time{} // not given again: the stored one stays
	must(t, s.StartRun(ctx, &r))

	got, err := s.GetRun(ctx, "q")
	must(t, err)
	if got.Status != engine.StatusRunning || !got.StartedAt.Equal(r.StartedAt) || !got.QueuedAt.Equal(t0) || got.Reason != "" {
		t.Errorf("started queued run: %+v", got)
	}
	// Starting keeps the run's place in the history.
	runs, err := s.ListRuns(ctx, engine.RunFilter{})
	must(t, err)
	if ids := runIDs(runs); !reflect.DeepEqual(ids, []string{"later", "q"}) {
		t.Errorf("ListRuns = %v, want [later q]", ids)
	}
	if qs, _ := s.QueuedRuns(ctx); len(qs) != 0 {
		t.Errorf("QueuedRuns after start = %v", runIDs(qs))
	}

	// A retried StartRun is harmless; starting a final run is not.
	must(t, s.StartRun(ctx, &r))
	fin := r
	fin.Status, fin.FinishedAt = engine.StatusCompleted, t0.Add(2*time.Second)
	must(t, s.FinishRun(ctx, &fin))
	if err := s.StartRun(ctx, &r); err == nil {
		t.Error("StartRun of a completed run succeeded")
	}
	got, _ = s.GetRun(ctx, "q")
	if got.Status != engine.StatusCompleted {
		t.Errorf("refused StartRun changed the run: %+v", got)
	}
}

func testStartFinishHookState(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	s1, s2 := t0, t0.Add(time.Hour)

	r1 := &engine.Run{ID: "r1", Hook: "h", Slot: s2, StartedAt: t0.Add(time.Minute)}
	must(t, s.StartRun(ctx, r1))
	checkState(t, s, engine.HookState{Hook: "h", LastSlot: s2, LastStart: r1.StartedAt, LastRunID: "r1", LastStatus: engine.StatusRunning,
		LastRunSlot: s2})

	// An older slot (catch-up of an earlier slot) does not move the last
	// slot back; the last run's slot is that run's.
	r2 := &engine.Run{ID: "r2", Hook: "h", Slot: s1, StartedAt: t0.Add(2 * time.Minute)}
	must(t, s.StartRun(ctx, r2))
	checkState(t, s, engine.HookState{Hook: "h", LastSlot: s2, LastStart: r2.StartedAt, LastRunID: "r2", LastStatus: engine.StatusRunning,
		LastRunSlot: s1})

	// Finishing a run that is no longer the latest start leaves the last status.
	r1.Status, r1.FinishedAt = engine.StatusCompleted, t0.Add(3*time.Minute)
	must(t, s.FinishRun(ctx, r1))
	checkState(t, s, engine.HookState{Hook: "h", LastSlot: s2, LastStart: r2.StartedAt, LastRunID: "r2", LastStatus: engine.StatusRunning,
		LastRunSlot: s1})

	r2.Status, r2.FinishedAt = engine.StatusFailed, t0.Add(4*time.Minute)
	must(t, s.FinishRun(ctx, r2))
	checkState(t, s, engine.HookState{Hook: "h", LastSlot: s2, LastStart: r2.StartedAt, LastRunID: "r2", LastStatus: engine.StatusFailed,
		LastRunSlot: s1})

	must(t, s.SetPaused(ctx, "h", true))
	checkState(t, s, engine.HookState{Hook: "h", Paused: true, LastSlot: s2, LastStart: r2.StartedAt, LastRunID: "r2", LastStatus: engine.StatusFailed,
		LastRunSlot: s1})

	// A run that fills no slot (a manual fire) has none: the cooldown of
	// the next slot is judged from its start.
	r3 := &engine.Run{ID: "r3", Hook: "h", Trigger: "manual", StartedAt: t0.Add(5 * time.Minute)}
	must(t, s.StartRun(ctx, r3))
	checkState(t, s, engine.HookState{Hook: "h", Paused: true, LastSlot: s2, LastStart: r3.StartedAt, LastRunID: "r3", LastStatus: engine.StatusRunning})

	// A run that completed with a check that did not pass: the last
	// status says which.
	r3.Status, r3.FinishedAt, r3.CheckFailed = engine.StatusCompleted, t0.Add(6*time.Minute), "tests"
	must(t, s.FinishRun(ctx, r3))
	checkState(t, s, engine.HookState{Hook: "h", Paused: true, LastSlot: s2, LastStart: r3.StartedAt, LastRunID: "r3", LastStatus: engine.StatusCompleted,
		LastCheckFailed: "tests"})

	err := s.FinishRun(ctx, &engine.Run{ID: "ghost", Hook: "h", Status: engine.StatusCompleted})
	if !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("FinishRun of an unknown run: %v, want ErrNotFound", err)
	}
}

func testRecordFirstSeen(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	must(t, s.RecordFirstSeen(ctx, nil, t0))
	must(t, s.RecordFirstSeen(ctx, []string{"a", "b", "b"}, t0))
	checkState(t, s, engine.HookState{Hook: "a", FirstSeen: t0})
	checkState(t, s, engine.HookState{Hook: "b", FirstSeen: t0})

	// The first time stays; a hook not seen before gets the later one.
	later := t0.Add(time.Hour)
	must(t, s.RecordFirstSeen(ctx, []string{"a", "c"}, later))
	checkState(t, s, engine.HookState{Hook: "a", FirstSeen: t0})
	checkState(t, s, engine.HookState{Hook: "c", FirstSeen: later})

	// It lives beside the rest of the hook's state, each kept by the
	// other's writes.
	must(t, s.SetPaused(ctx, "a", true))
	r := &engine.Run{ID: "r", Hook: "a", Slot: later, StartedAt: later}
	must(t, s.StartRun(ctx, r))
	checkState(t, s, engine.HookState{Hook: "a", Paused: true, FirstSeen: t0, LastSlot: later, LastStart: later,
		LastRunID: "r", LastStatus: engine.StatusRunning, LastRunSlot: later})
	must(t, s.StartRun(ctx, &engine.Run{ID: "d1", Hook: "d", StartedAt: later}))
	must(t, s.RecordFirstSeen(ctx, []string{"d"}, later))
	checkState(t, s, engine.HookState{Hook: "d", FirstSeen: later, LastStart: later, LastRunID: "d1", LastStatus: engine.StatusRunning})
	states, err := s.HookStates(ctx)
	must(t, err)
	if len(states) != 4 {
		t.Errorf("HookStates has %d hooks, want a, b, c, d: %v", len(states), states)
	}
}

func testSetPaused(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	for _, p := range []bool{true, false, true} {
		must(t, s.SetPaused(ctx, "h", p))
		checkState(t, s, engine.HookState{Hook: "h", Paused: p})
	}
	states, err := s.HookStates(ctx)
	must(t, err)
	if len(states) != 1 {
		t.Errorf("HookStates = %v", states)
	}
}

func testSlotClaim(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	cases := []struct {
		name  string
		first func(hook string) error // claims the slot for run "a"+hook
	}{
		{"started", func(h string) error {
			return s.StartRun(ctx, &engine.Run{ID: "a" + h, Hook: h, Slot: t0, StartedAt: t0})
		}},
		{"skipped", func(h string) error {
			return s.InsertRun(ctx, &engine.Run{ID: "a" + h, Hook: h, Slot: t0, Status: engine.StatusSkipped, Reason: "cooldown"})
		}},
		{"queued", func(h string) error {
			return s.InsertRun(ctx, &engine.Run{ID: "a" + h, Hook: h, Slot: t0, Status: engine.StatusQueued})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.name
			must(t, tc.first(h))
			before := snapshot(t, s)

			err := s.StartRun(ctx, &engine.Run{ID: "b" + h, Hook: h, Slot: t0, StartedAt: t0.Add(time.Second)})
			if !isSlotTaken(err) {
				t.Fatalf("second claim of the slot: %v, want ErrSlotTaken", err)
			}
			want := fmt.Sprintf("start run b%s: slot 2025-03-14T15:09:26.535897932Z of hook %s is held by run a%s: engine: slot already fired", h, h, h)
			if err.Error() != want {
				t.Errorf("error:\n got %s\nwant %s", err, want)
			}
			if after := snapshot(t, s); !reflect.DeepEqual(before, after) {
				t.Errorf("refused StartRun changed the store:\nbefore %+v\nafter  %+v", before, after)
			}
			// The same slot of another hook is free, and the holder may start.
			must(t, s.StartRun(ctx, &engine.Run{ID: "c" + h, Hook: "other-" + h, Slot: t0, StartedAt: t0}))
			if tc.name == "queued" {
				must(t, s.StartRun(ctx, &engine.Run{ID: "a" + h, Hook: h, Slot: t0, StartedAt: t0}))
			}
		})
	}
}

// testConcurrentSlotClaim races many runs for one slot, through two
// handles on the database (two processes, or two nodes): exactly one wins.
func testConcurrentSlotClaim(t *testing.T, e *env) {
	ctx := context.Background()
	handles := []Store{e.store(), e.store()}
	const n = 20
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		won    []string
		failed []error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint(i)
			err := handles[i%2].StartRun(ctx, &engine.Run{ID: id, Hook: "h", Slot: t0, StartedAt: t0})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, id)
			case !isSlotTaken(err):
				failed = append(failed, err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 || len(failed) > 0 {
		t.Fatalf("%d runs claimed the slot (want 1); other errors: %v", len(won), failed)
	}
	runs, err := handles[0].ListRuns(ctx, engine.RunFilter{Limit: 100})
	must(t, err)
	if got := runIDs(runs); !reflect.DeepEqual(got, won) {
		t.Errorf("stored runs %v, want only the winner %v", got, won)
	}
}

func testListRuns(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	// r00..r09 alternate hooks a and b; odd ones are skipped.
	for i := range 10 {
		r := &engine.Run{ID: fmt.Sprintf("r%02d", i), Hook: []string{"a", "b"}[i%2], Status: engine.StatusCompleted}
		if i%2 == 1 {
			r.Status = engine.StatusSkipped
		}
		must(t, s.InsertRun(ctx, r))
	}
	cases := []struct {
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
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runs, err := s.ListRuns(ctx, tc.f)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ListRuns: %v, want %v", err, tc.wantErr)
			}
			if got := runIDs(runs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ListRuns(%+v) = %v, want %v", tc.f, got, tc.want)
			}
			if err == nil && runs == nil {
				t.Errorf("ListRuns returned nil, want an empty list (JSON [])")
			}
		})
	}
}

func testListRunsDefaultLimit(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	for i := range 60 {
		must(t, s.InsertRun(ctx, &engine.Run{ID: fmt.Sprint(i), Hook: "h", Status: engine.StatusSkipped, Reason: fmt.Sprint(i)}))
	}
	runs, err := s.ListRuns(ctx, engine.RunFilter{})
	must(t, err)
	if len(runs) != 50 || runs[0].ID != "59" {
		t.Errorf("ListRuns with no limit: %d runs, first %s; want 50, first 59", len(runs), runs[0].ID)
	}
}

func testQueuedRunsSurviveReopen(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	for i, id := range []string{"q1", "x", "q2", "q3"} {
		st := engine.StatusQueued
		if id == "x" {
			st = engine.StatusDropped
		}
		must(t, s.InsertRun(ctx, &engine.Run{ID: id, Hook: "h" + id, Status: st, QueuedAt: t0.Add(time.Duration(i) * time.Second),
			Event: json.RawMessage(`{"i":1}`), EventType: "e"}))
	}
	must(t, s.UpdateQueued(ctx, &engine.Run{ID: "q2", Trigger: "event", Reason: "coalesced",
		Event: json.RawMessage(`{"i":2}`), EventType: "e2", Depth: 1}, engine.Merged{}))
	must(t, s.Close())
	must(t, s.Close()) // safe twice

	s2 := e.store()
	qs, err := s2.QueuedRuns(ctx)
	must(t, err)
	if got := runIDs(qs); !reflect.DeepEqual(got, []string{"q1", "q2", "q3"}) {
		t.Fatalf("QueuedRuns after reopen = %v, want oldest first [q1 q2 q3]", got)
	}
	q2 := qs[1]
	if string(q2.Event) != `{"i":2}` || q2.EventType != "e2" || q2.Trigger != "event" || q2.Reason != "coalesced" ||
		q2.Depth != 1 || !q2.QueuedAt.Equal(t0.Add(2*time.Second)) {
		t.Errorf("updated queued run: %+v", q2)
	}
}

// testUpdateQueuedRecordsMergedSlot: a slot merged into a queued run is
// that run's, and the hook's last slot, in the same write; a later claim
// of it is refused.
func testUpdateQueuedRecordsMergedSlot(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	s1, s2 := t0.Add(10*time.Second), t0.Add(20*time.Second)
	must(t, s.InsertRun(ctx, &engine.Run{ID: "p", Hook: "h", Status: engine.StatusQueued, Slot: s1, QueuedAt: s1}))
	must(t, s.UpdateQueued(ctx, &engine.Run{ID: "p", Hook: "h", Reason: "coalesced"}, engine.Merged{Slot: s2}))
	st, err := s.HookStates(ctx)
	must(t, err)
	if !st["h"].LastSlot.Equal(s2) {
		t.Errorf("last slot = %v, want the merged slot %v", st["h"].LastSlot, s2)
	}
	err = s.StartRun(ctx, &engine.Run{ID: "again", Hook: "h", Slot: s2, StartedAt: s2})
	if !isSlotTaken(err) {
		t.Errorf("starting a run for the merged slot: %v, want ErrSlotTaken", err)
	}
	// The queued run itself still starts for its own slot.
	must(t, s.StartRun(ctx, &engine.Run{ID: "p", Hook: "h", Slot: s1, StartedAt: s2}))
}

func testUpdateQueuedRefusesOthers(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	must(t, s.InsertRun(ctx, &engine.Run{ID: "s", Hook: "h", Status: engine.StatusSkipped, Event: json.RawMessage(`{}`)}))
	for _, id := range []string{"s", "missing"} {
		err := s.UpdateQueued(ctx, &engine.Run{ID: id, Hook: "h", Event: json.RawMessage(`{"x":1}`)}, engine.Merged{Slot: t0})
		if !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("UpdateQueued(%s): %v, want ErrNotFound", id, err)
		}
	}
	r, _ := s.GetRun(ctx, "s")
	if string(r.Event) != `{}` {
		t.Errorf("UpdateQueued changed a skipped run: %s", r.Event)
	}
}

func testRecoverInterrupted(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	must(t, s.StartRun(ctx, &engine.Run{ID: "run1", Hook: "a", StartedAt: t0}))
	must(t, s.StartRun(ctx, &engine.Run{ID: "run2", Hook: "b", StartedAt: t0}))
	must(t, s.StartRun(ctx, &engine.Run{ID: "done", Hook: "c", StartedAt: t0}))
	must(t, s.FinishRun(ctx, &engine.Run{ID: "done", Hook: "c", Status: engine.StatusCompleted, FinishedAt: t0}))
	must(t, s.InsertRun(ctx, &engine.Run{ID: "queued", Hook: "d", Status: engine.StatusQueued}))
	must(t, s.Close()) // "crash"

	s = e.store()
	now := t0.Add(time.Hour)
	runs, err := s.RecoverInterrupted(ctx, now)
	must(t, err)
	if got := runIDs(runs); !reflect.DeepEqual(got, []string{"run1", "run2"}) {
		t.Fatalf("RecoverInterrupted = %v, want [run1 run2]", got)
	}
	for _, r := range runs {
		stored, err := s.GetRun(ctx, r.ID)
		must(t, err)
		if !reflect.DeepEqual(stored, r) {
			t.Errorf("returned %+v, stored %+v", r, stored)
		}
		if r.Status != engine.StatusInterrupted || r.Reason == "" || !r.FinishedAt.Equal(now) || !r.StartedAt.Equal(t0) {
			t.Errorf("recovered run %+v", r)
		}
	}
	checkState(t, s, engine.HookState{Hook: "a", LastStart: t0, LastRunID: "run1", LastStatus: engine.StatusInterrupted})
	checkState(t, s, engine.HookState{Hook: "c", LastStart: t0, LastRunID: "done", LastStatus: engine.StatusCompleted})
	if q, _ := s.GetRun(ctx, "queued"); q.Status != engine.StatusQueued {
		t.Errorf("queued run recovered: %+v", q)
	}
	runs, err = s.RecoverInterrupted(ctx, now)
	if err != nil || len(runs) != 0 {
		t.Errorf("second RecoverInterrupted = %v, %v; want none", runIDs(runs), err)
	}
}

// testRecoveredRunsOwedFollowUp: each run RecoverInterrupted marks
// interrupted is owed its follow-up, across a reopen, until Follow stores
// it (a pending rerun, a pending retry, or nothing) in the transaction
// that clears it; a second Follow of the same run stores nothing.
func testRecoveredRunsOwedFollowUp(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	for _, id := range []string{"rerun", "retry", "none"} {
		must(t, s.StartRun(ctx, &engine.Run{ID: id, Hook: id, StartedAt: t0}))
	}
	must(t, s.StartRun(ctx, &engine.Run{ID: "done", Hook: "done", StartedAt: t0}))
	must(t, s.FinishRun(ctx, &engine.Run{ID: "done", Hook: "done", Status: engine.StatusCompleted, FinishedAt: t0}))
	now := t0.Add(time.Hour)
	_, err = s.RecoverInterrupted(ctx, now)
	must(t, err)
	must(t, s.Close()) // killed before it stored what follows them
	s = e.store()
	owed, err := s.Owed(ctx)
	must(t, err)
	if got := runIDs(owed); !reflect.DeepEqual(got, []string{"rerun", "retry", "none"}) {
		t.Fatalf("Owed = %v, want [rerun retry none]", got)
	}
	rerun := &engine.PendingRerun{RunID: "rerun2", Hook: "rerun", Interrupted: "rerun", PlannedAt: now}
	retry := &engine.PendingRetry{RetryPlan: engine.RetryPlan{RunID: "retry2", Attempt: 2, At: now}, Hook: "retry", RetryOf: "retry", Attempts: 3}
	must(t, s.Follow(ctx, "rerun", nil, rerun))
	must(t, s.Follow(ctx, "retry", retry, nil))
	must(t, s.Follow(ctx, "none", nil, nil))
	if err := s.Follow(ctx, "rerun", nil, &engine.PendingRerun{RunID: "rerun3", Hook: "rerun", Interrupted: "rerun", PlannedAt: now}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("second Follow = %v, want ErrNotFound", err)
	}
	if err := s.Follow(ctx, "done", nil, nil); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Follow of a run not interrupted = %v, want ErrNotFound", err)
	}
	owed, err = s.Owed(ctx)
	if err != nil || len(owed) != 0 {
		t.Errorf("Owed after Follow = %v, %v; want none", runIDs(owed), err)
	}
	reruns, err := s.PendingReruns(ctx)
	must(t, err)
	if len(reruns) != 1 || reruns[0].RunID != "rerun2" {
		t.Errorf("pending reruns = %+v, want rerun2 alone", reruns)
	}
	retries, err := s.PendingRetries(ctx)
	must(t, err)
	if len(retries) != 1 || retries[0].RunID != "retry2" {
		t.Errorf("pending retries = %+v, want retry2 alone", retries)
	}
}

// testRecoverInterruptedReturnsProcs: the process groups recorded while
// a run ran come back with it when a crash left it running.
func testRecoverInterruptedReturnsProcs(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	must(t, s.StartRun(ctx, &engine.Run{ID: "r", Hook: "h", StartedAt: t0}))
	must(t, s.StartRun(ctx, &engine.Run{ID: "none", Hook: "h2", StartedAt: t0}))
	gs := []engine.ProcGroup{{PGID: 4242, Start: 99, Boot: "b", Step: 1}, {PGID: 4250, Start: 120, Boot: "b", Step: -1}}
	for _, g := range gs {
		must(t, s.AddRunProc(ctx, "r", g))
	}
	runs, err := s.RecoverInterrupted(ctx, t0)
	must(t, err)
	got := map[string][]engine.ProcGroup{}
	for _, r := range runs {
		got[r.ID] = r.Procs
	}
	if !reflect.DeepEqual(got, map[string][]engine.ProcGroup{"r": gs, "none": nil}) {
		t.Errorf("recovered procs = %+v", got)
	}
}

func testLastFingerprint(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	fp, err := s.LastFingerprint(ctx, "h")
	if err != nil || fp != "" {
		t.Fatalf("LastFingerprint of a new hook = %q, %v", fp, err)
	}
	for _, r := range []engine.Run{
		{ID: "1", Hook: "h", Status: engine.StatusCompleted, Fingerprint: "one"},
		{ID: "2", Hook: "h", Status: engine.StatusSkipped, Fingerprint: "two"},
		{ID: "3", Hook: "h", Status: engine.StatusSkipped, Reason: "cooldown"},
		{ID: "4", Hook: "other", Status: engine.StatusCompleted, Fingerprint: "four"},
	} {
		must(t, s.InsertRun(ctx, &r))
	}
	fp, err = s.LastFingerprint(ctx, "h")
	if err != nil || fp != "two" {
		t.Errorf("LastFingerprint = %q, %v; want two", fp, err)
	}
}

// testSkipRecordsCollapse: the skip records of a paused or disabled hook,
// one per trigger, collapse into one record with a count and a time
// range, as long as nothing else happens to the hook; other skips do not.
func testSkipRecordsCollapse(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	paused := func(i int) *engine.Run {
		at := t0.Add(time.Duration(i) * time.Minute)
		return &engine.Run{ID: engine.NewID(), Hook: "p", Trigger: "schedule", Slot: at, Status: engine.StatusSkipped,
			Gate: engine.GatePaused, Reason: "paused: hook p is paused", QueuedAt: at, FinishedAt: at}
	}
	var first string
	for i := range 5 {
		r := paused(i)
		must(t, s.InsertRun(ctx, r))
		if i == 0 {
			first = r.ID
		}
		if r.ID != first || i > 0 && r.Repeats != i+1 {
			t.Fatalf("skip %d: id %s repeats %d, want id %s repeats %d", i, r.ID, r.Repeats, first, i+1)
		}
	}
	runs, err := s.ListRuns(ctx, engine.RunFilter{Hook: "p"})
	must(t, err)
	if len(runs) != 1 {
		t.Fatalf("%d records, want 1", len(runs))
	}
	r := runs[0]
	if r.Repeats != 5 || !r.QueuedAt.Equal(t0) || !r.FinishedAt.Equal(t0.Add(4*time.Minute)) || !r.Slot.Equal(t0.Add(4*time.Minute)) {
		t.Errorf("collapsed record: repeats %d, %s to %s, slot %s", r.Repeats, r.QueuedAt, r.FinishedAt, r.Slot)
	}
	// Every slot is still claimed, by the one record.
	for i := range 5 {
		at := t0.Add(time.Duration(i) * time.Minute)
		if err := s.StartRun(ctx, &engine.Run{ID: engine.NewID(), Hook: "p", Slot: at, StartedAt: at}); !isSlotTaken(err) {
			t.Errorf("slot %d of the collapsed record: %v, want ErrSlotTaken", i, err)
		}
	}
	states, err := s.HookStates(ctx)
	must(t, err)
	if !states["p"].LastSlot.Equal(t0.Add(4 * time.Minute)) {
		t.Errorf("last slot %s", states["p"].LastSlot)
	}

	// A disabled hook's record differs: a new record, which collapses in turn.
	dis := paused(5)
	dis.Gate, dis.Reason = engine.GateDisabled, "disabled: hook p has enabled: false"
	must(t, s.InsertRun(ctx, dis))
	dis2 := paused(6)
	dis2.Gate, dis2.Reason = engine.GateDisabled, "disabled: hook p has enabled: false"
	must(t, s.InsertRun(ctx, dis2))
	if dis2.ID != dis.ID || dis2.Repeats != 2 {
		t.Errorf("second disabled record: id %s repeats %d, want %s and 2", dis2.ID, dis2.Repeats, dis.ID)
	}
	// A run in between starts a new record.
	must(t, s.InsertRun(ctx, &engine.Run{ID: engine.NewID(), Hook: "p", Status: engine.StatusCompleted, FinishedAt: t0.Add(10 * time.Minute)}))
	again := paused(11)
	must(t, s.InsertRun(ctx, again))
	if again.ID == first || again.Repeats > 1 {
		t.Errorf("a skip after a run merged into the record before it (id %s repeats %d)", again.ID, again.Repeats)
	}
	// Other gates' records stay one per trigger.
	for range 2 {
		must(t, s.InsertRun(ctx, &engine.Run{ID: engine.NewID(), Hook: "c", Status: engine.StatusSkipped,
			Gate: engine.GateInFlight, Reason: "in_flight: run X was still running"}))
	}
	if runs, _ := s.ListRuns(ctx, engine.RunFilter{Hook: "c"}); len(runs) != 2 {
		t.Errorf("in_flight records: %d, want 2", len(runs))
	}
}

// testCoalescedTraceLinks: the traces of the triggers coalesced into a
// queued run (engine.Run.TraceLinks) are stored with it by UpdateQueued,
// survive a reopen, and stay with the run through its start and its end.
func testCoalescedTraceLinks(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	const own = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	links := engine.TraceLinks{Parents: []engine.TraceParent{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-11111111111111111111111111111111-2222222222222222-00"}, Dropped: 4}
	must(t, s.InsertRun(ctx, &engine.Run{ID: "p", Hook: "h", Status: engine.StatusQueued, Trigger: "event", QueuedAt: t0, TraceParent: own}))
	if r, err := s.GetRun(ctx, "p"); err != nil || !r.TraceLinks.IsZero() {
		t.Fatalf("a queued run nothing was coalesced into: %+v %v", r, err)
	}
	must(t, s.UpdateQueued(ctx, &engine.Run{ID: "p", Hook: "h", Trigger: "event", Reason: "coalesced", TraceParent: own,
		TraceLinks: links}, engine.Merged{}))
	must(t, s.Close())

	s = e.store()
	qs, err := s.QueuedRuns(ctx)
	must(t, err)
	if len(qs) != 1 {
		t.Fatalf("QueuedRuns after reopen: %d runs, want p", len(qs))
	}
	if qs[0].TraceParent != own || !reflect.DeepEqual(qs[0].TraceLinks, links) {
		t.Fatalf("p after reopen continues %q, links to %+v; want %s, %+v", qs[0].TraceParent, qs[0].TraceLinks, own, links)
	}
	must(t, s.StartRun(ctx, &engine.Run{ID: "p", Hook: "h", Trigger: "event", QueuedAt: t0, StartedAt: t0.Add(time.Second)}))
	must(t, s.FinishRun(ctx, &engine.Run{ID: "p", Hook: "h", Trigger: "event", Status: engine.StatusCompleted,
		QueuedAt: t0, StartedAt: t0.Add(time.Second), FinishedAt: t0.Add(2 * time.Second), TraceParent: own}))
	r, err := s.GetRun(ctx, "p")
	must(t, err)
	if r.Status != engine.StatusCompleted || !reflect.DeepEqual(r.TraceLinks, links) {
		t.Errorf("the finished run: %s, trace links %+v; want %+v", r.Status, r.TraceLinks, links)
	}
}

// testStartedByTraceLinks: the span of the run that caused an event, a
// pending rerun or a run (engine.Event.TraceLink, PendingRerun.TraceLink,
// Run.TraceLinks.StartedBy) is stored with it and read back, past a
// reopen, apart from a caller's trace parent; a pending event keeps it
// for the node that dispatches it.
func testStartedByTraceLinks(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	const (
		span   = engine.TraceParent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		caller = engine.TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	)
	must(t, s.AppendEvent(ctx, &engine.Event{ID: "linked", Type: "child.go", Source: "hook:parent", Time: t0, Depth: 1, TraceLink: span}))
	must(t, s.AppendEvent(ctx, &engine.Event{ID: "continued", Type: "child.go", Source: "api", Time: t0, TraceParent: caller}))
	must(t, s.AppendPendingEvent(ctx, &engine.Event{ID: "pending", Type: "child.go", Source: "hook:parent", Time: t0, Depth: 1, TraceLink: span}))
	must(t, s.AddRerun(ctx, &engine.PendingRerun{RunID: "rr", Hook: "h", Interrupted: "i", PlannedAt: t0, TraceLink: span}))
	must(t, s.InsertRun(ctx, &engine.Run{ID: "q", Hook: "h", Status: engine.StatusQueued, Trigger: "event", QueuedAt: t0,
		TraceLinks: engine.TraceLinks{StartedBy: span}}))
	must(t, s.Close())

	s = e.store()
	evs, err := s.ListEvents(ctx, "child.go", 10)
	must(t, err)
	got := map[string][2]engine.TraceParent{}
	for _, ev := range evs {
		got[ev.ID] = [2]engine.TraceParent{ev.TraceParent, ev.TraceLink}
	}
	want := map[string][2]engine.TraceParent{"linked": {"", span}, "continued": {caller, ""}, "pending": {"", span}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events' (trace parent, trace link) = %v, want %v", got, want)
	}
	pending, err := s.PendingEvents(ctx, 10)
	must(t, err)
	if len(pending) != 1 || pending[0].TraceLink != span || pending[0].TraceParent != "" {
		t.Errorf("PendingEvents = %+v, want the pending event linked to %s", pending, span)
	}
	reruns, err := s.PendingReruns(ctx)
	must(t, err)
	if len(reruns) != 1 || reruns[0].TraceLink != span || reruns[0].TraceParent != "" {
		t.Errorf("PendingReruns = %+v, want rr linked to %s", reruns, span)
	}
	qs, err := s.QueuedRuns(ctx)
	must(t, err)
	if len(qs) != 1 || !reflect.DeepEqual(qs[0].TraceLinks, engine.TraceLinks{StartedBy: span}) {
		t.Errorf("QueuedRuns = %+v, want q started by %s", qs, span)
	}
}
