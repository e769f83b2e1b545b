package engine_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// version returns a copy of h as another version of its file.
func version(h *engine.Hook, v string) *engine.Hook {
	cp := *h
	cp.Source.Version = v
	return &cp
}

func (h *harness) reload(hooks ...*engine.Hook) engine.ReloadReport {
	h.t.Helper()
	rep, err := h.eng.Reload(context.Background(), hooks)
	if err != nil {
		h.t.Fatalf("reload: %v", err)
	}
	return rep
}

func (h *harness) status(name string) (engine.HookStatus, bool) {
	h.t.Helper()
	hs, err := h.eng.Hooks(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	for _, s := range hs {
		if s.Name == name {
			return s, true
		}
	}
	return engine.HookStatus{}, false
}

func TestReloadAddsReplacesAndRemoves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		keep := version(newHook("keep"), "v1")
		edit := version(every(newHook("edit"), time.Hour), "v1")
		gone := version(newHook("gone"), "v1")
		gone.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "x.*"}
		h := newHarness(t, []*engine.Hook{keep, edit, gone})
		defer h.stop()
		h.advance(90 * time.Minute) // edit ran at 01:00
		before, _ := h.status("edit")

		added := version(every(newHook("added"), time.Minute), "v1")
		rep := h.reload(keep, version(edit, "v2"), added)
		if !slices.Equal(rep.Added, []string{"added"}) || !slices.Equal(rep.Changed, []string{"edit"}) ||
			!slices.Equal(rep.Removed, []string{"gone"}) || rep.Unchanged != 1 {
			t.Fatalf("report = %+v", rep)
		}
		st, ok := h.status("edit")
		if !ok || st.Version != "v2" || !st.LastStart.Equal(before.LastStart) || !st.NextDue.Equal(before.NextDue) {
			t.Errorf("edit after reload: %+v (before %+v)", st, before)
		}
		if _, ok := h.status("gone"); ok {
			t.Error("a removed hook is still listed")
		}
		if _, err := h.fire("gone", engine.FireOptions{}); err == nil {
			t.Error("a removed hook can still be fired")
		}
		runs, err := h.eng.Emit(context.Background(), &engine.Event{Type: "x.y"})
		if err != nil || len(runs) != 0 {
			t.Errorf("an event of a removed hook's pattern fired %v (%v)", runs, err)
		}
		// The added hook is scheduled from now: no catch-up for slots before it existed.
		h.advance(time.Minute)
		if r := h.runs("added"); len(r) != 1 || r[0].Trigger != "schedule" {
			t.Errorf("added hook runs: %v", statuses(r))
		}
		if r := h.runs("edit"); len(r) != 1 {
			t.Errorf("edit ran %d times, want once (its slot is kept)", len(r))
		}
	})
}

func TestReloadKeepsStateAndReschedules(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := version(every(newHook("h"), time.Hour), "v1")
		h := newHarness(t, []*engine.Hook{hk})
		defer h.stop()
		h.advance(61 * time.Minute)
		if err := h.eng.SetPaused(context.Background(), "h", true); err != nil {
			t.Fatal(err)
		}
		// A new interval: rescheduled from now, still paused.
		h.reload(version(every(newHook("h"), 10*time.Minute), "v2"))
		st, _ := h.status("h")
		if !st.Paused || st.NextDue.Sub(time.Date(2000, 1, 1, 1, 10, 0, 0, time.UTC)) != 0 {
			t.Errorf("after reload: paused %v, next due %v", st.Paused, st.NextDue)
		}
		// No longer periodic: unscheduled.
		h.reload(version(newHook("h"), "v3"))
		if st, _ := h.status("h"); !st.NextDue.IsZero() {
			t.Errorf("manual hook is due %v", st.NextDue)
		}
		h.advance(2 * time.Hour)
		if r := h.runs("h"); len(r) != 1 {
			t.Errorf("runs %v; want only the one before the reloads", statuses(r))
		}
	})
}

func TestReloadRunInFlightFinishesWithOldDefinition(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		old := version(withSteps(newHook("h"), block), "v1")
		h := newHarness(t, []*engine.Hook{old})
		defer h.stop()
		first := h.mustFire("h")
		h.settle()

		marker := funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			return &engine.StepResult{Output: "new definition"}, nil
		})
		h.reload(version(withSteps(newHook("h"), marker), "v2"))
		if _, err := h.fire("h", engine.FireOptions{}); gateOf(err) != engine.GateInFlight {
			t.Fatalf("fire during the old run: %v", err)
		}
		close(block.release)
		h.settle()
		if r := h.run(first.ID); r.Status != engine.StatusCompleted || r.Steps[0].Output != "released" {
			t.Errorf("run in flight: %s %v", r.Status, r.Steps)
		}
		second := h.mustFire("h")
		h.settle()
		if r := h.run(second.ID); r.Steps[0].Output != "new definition" {
			t.Errorf("run after the reload used %v", r.Steps)
		}
	})
}

func TestReloadRemovedHookCancelsQueuedRuns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		busy := withSteps(newHook("busy"), block)
		busy.Overlap = engine.OverlapQueue
		waiting := newHook("waiting")
		h := newHarness(t, []*engine.Hook{busy, waiting}, func(c *engine.Config) { c.MaxConcurrent = 1 })
		defer h.stop()
		running := h.mustFire("busy")
		h.settle()
		pending := h.mustFire("busy") // overlap: queue
		queued := h.mustFire("waiting")
		if pending.Status != engine.StatusQueued || queued.Status != engine.StatusQueued {
			t.Fatalf("pending %s, queued %s", pending.Status, queued.Status)
		}

		rep := h.reload()
		if !slices.Equal(rep.Removed, []string{"busy", "waiting"}) || len(rep.Cancelled) != 2 {
			t.Fatalf("report = %+v", rep)
		}
		for _, id := range []string{pending.ID, queued.ID} {
			if r := h.run(id); r.Status != engine.StatusCancelled || !strings.HasPrefix(r.Reason, "removed: ") {
				t.Errorf("run %s of a removed hook: %s %q", r.Hook, r.Status, r.Reason)
			}
		}
		sum, _ := h.eng.Summary(context.Background())
		if !slices.Equal(sum.InFlight, []string{running.ID}) || len(sum.Queued) != 0 {
			t.Errorf("summary: %+v", sum)
		}
		// Back while its old run is still in flight: the gates know it.
		back := withSteps(newHook("busy"), block)
		h.reload(back)
		if _, err := h.fire("busy", engine.FireOptions{}); gateOf(err) != engine.GateInFlight {
			t.Fatalf("fire of a hook back while its old run is in flight: %v", err)
		}
		close(block.release)
		h.settle()
		if r := h.run(running.ID); r.Status != engine.StatusCompleted {
			t.Errorf("the run in flight: %s", r.Status)
		}
		sum, _ = h.eng.Summary(context.Background())
		if len(sum.InFlight) != 0 || len(sum.Queued) != 0 {
			t.Errorf("summary after: %+v", sum)
		}
	})
}

func TestReloadRefusesDuplicates(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, []*engine.Hook{newHook("a")})
		defer h.stop()
		if _, err := h.eng.Reload(context.Background(), []*engine.Hook{newHook("b"), newHook("b")}); err == nil {
			t.Fatal("duplicate names accepted")
		}
		if _, ok := h.status("a"); !ok {
			t.Error("a failed reload changed the hooks")
		}
	})
}

func watchHook(name string) *engine.Hook {
	hk := newHook(name)
	hk.Trigger = engine.Trigger{Kind: engine.TriggerWatch, Watch: &engine.WatchSpec{Paths: []string{"/tmp/x"}, Debounce: time.Second}}
	return hk
}

func changeList(ops ...string) map[string]any {
	var list []any
	for i := 0; i+1 < len(ops); i += 2 {
		list = append(list, map[string]any{"path": ops[i], "operation": ops[i+1]})
	}
	return map[string]any{"changes": list, "count": len(list)}
}

// TestFireWatchPublishesToEventTriggers: a watch's change fires its own
// hook once, by its watch, and the event triggers on its type, by event.
func TestFireWatchPublishesToEventTriggers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := watchHook("w")
		listener := newHook("listener")
		listener.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "folder.changed"}
		h := newHarness(t, []*engine.Hook{w, listener})
		defer h.stop()
		run, err := h.eng.FireWatch(context.Background(), "w", &engine.Event{Type: engine.EventFolderChanged, Data: changeList("/a", "created")})
		if err != nil {
			t.Fatal(err)
		}
		h.settle()
		r := h.run(run.ID)
		if r.Status != engine.StatusCompleted || r.Trigger != "watch" || r.EventType != engine.EventFolderChanged {
			t.Errorf("watch run: %s %s %s", r.Status, r.Trigger, r.EventType)
		}
		if got := h.runs("listener"); len(got) != 1 || got[0].Trigger != "event" || got[0].EventType != engine.EventFolderChanged {
			t.Errorf("an event trigger on folder.changed: %v, want one run by event", got)
		}
		if n := len(h.runs("w")); n != 1 {
			t.Errorf("the watch's hook ran %d times, want once", n)
		}
		if evs := h.eventsOf(engine.EventFolderChanged); len(evs) != 1 || evs[0].Source != "watch:w" {
			t.Errorf("subscribers saw %v", evs)
		}
		if _, err := h.eng.FireWatch(context.Background(), "nope", &engine.Event{Type: engine.EventFileChanged}); err == nil {
			t.Error("unknown hook fired")
		}
	})
}

// TestFireWatchMergesPendingChanges: a watch trigger that joins a pending
// run (overlap: queue) merges its payload into the pending one with the
// event's own Merge (package triggers' window rules), which gets the
// pending payload; the engine applies no change-list rules itself. An
// event without Merge merges by later keys winning.
func TestFireWatchMergesPendingChanges(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		var seen []map[string]any
		w := withSteps(watchHook("w"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			seen = append(seen, env.Scope.Event)
			return block.Run(ctx, env)
		}))
		w.Overlap = engine.OverlapQueue
		h := newHarness(t, []*engine.Hook{w})
		defer h.stop()
		var gotPending []string
		fire := func(data map[string]any, merged map[string]any) *engine.Run {
			ev := &engine.Event{Type: engine.EventFolderChanged, Data: data}
			if merged != nil {
				ev.Merge = func(pending json.RawMessage) (map[string]any, error) {
					gotPending = append(gotPending, string(pending))
					return merged, nil
				}
			}
			r, err := h.eng.FireWatch(context.Background(), "w", ev)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		fire(changeList("/a", "modified"), nil)
		h.settle()
		pending := fire(changeList("/b", "created"), map[string]any{"never": "used: nothing pending yet"})
		fire(changeList("/b", "deleted", "/c", "created"), map[string]any{"by": "merge", "count": 1})
		fire(map[string]any{"count": 2, "extra": true}, nil)
		close(block.release)
		h.settle()
		if r := h.run(pending.ID); r.Status != engine.StatusCompleted {
			t.Fatalf("pending run: %s", r.Status)
		}
		if want := []string{`{"changes":[{"operation":"created","path":"/b"}],"count":1}`}; !reflect.DeepEqual(gotPending, want) {
			t.Errorf("Merge got %q, want %q", gotPending, want)
		}
		got, _ := json.Marshal(seen[1])
		if want := `{"by":"merge","count":2,"extra":true}`; string(got) != want {
			t.Errorf("merged payload:\n got %s\nwant %s", got, want)
		}
	})
}
