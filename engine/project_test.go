package engine_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
)

// TestEventProjectScoping: as in agent-queue, an event hook with a
// project_id fires for events of its project and events that name none,
// not for another project's; a hook without one fires for all.
func TestEventProjectScoping(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		scoped := newHook("scoped")
		scoped.Project = "webapp"
		scoped.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "task.completed"}
		all := newHook("all")
		all.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "task.completed"}
		h := newHarness(t, []*engine.Hook{scoped, all})
		defer h.stop()
		for _, data := range []map[string]any{{"project_id": "webapp"}, {"project_id": "other"}, {"task_id": "t1"}} {
			if _, err := h.eng.Emit(context.Background(), &engine.Event{Type: "task.completed", Data: data}); err != nil {
				t.Fatal(err)
			}
			h.settle()
		}
		if n := len(h.runs("scoped")); n != 2 {
			t.Errorf("scoped hook ran %d times, want 2 (its project's event and the one naming none)", n)
		}
		if n := len(h.runs("all")); n != 3 {
			t.Errorf("unscoped hook ran %d times, want 3", n)
		}
	})
}
