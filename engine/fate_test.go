package engine_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
)

// fateHooks are two event hooks with a where: each (payload filters, a
// condition) and one without.
func fateHooks(t *testing.T) []*engine.Hook {
	prod := newHook("prod")
	prod.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.finished", Where: map[string]any{"env": "prod"}}
	big := newHook("big")
	big.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.finished"}
	var err error
	if big.Trigger.WhereIf, err = engine.CompileCondition(`event.n > 5`, nil, 0); err != nil {
		t.Fatal(err)
	}
	audit := newHook("audit")
	audit.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.started"}
	return []*engine.Hook{prod, big, audit}
}

// TestEventFates: what became of each emitted event is reported by
// EmitReport and stored with the event (read back by ListEvents): no hook
// listens to a misspelt type (with the types hooks listen to nearest to
// it), the hooks whose where: rejected it, the handler that claimed it,
// the runs it started. Before, all four were "0 run(s)" or the runs, and
// the event's record said nothing.
func TestEventFates(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hs := newHarness(t, fateHooks(t))
		defer hs.stop()
		hs.eng.Lifecycle().On(engine.PointEventClaim, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			return engine.Decision{Claimed: p.Event.Data["mine"] == true}, nil
		}, engine.HandlerOptions{Label: "router"})
		ctx := context.Background()

		cases := []struct {
			ev   *engine.Event
			want engine.EventFate
			text string
		}{
			{&engine.Event{Type: "deploy.finishd"},
				engine.EventFate{Unheard: true, Nearest: []string{"deploy.finished"}},
				"no hook listens to deploy.finishd (hooks listen to deploy.finished)"},
			{&engine.Event{Type: "deploy.finished", Data: map[string]any{"env": "dev", "n": 1}},
				engine.EventFate{Rejected: []string{"big", "prod"}},
				"rejected by where: of hooks big, prod"},
			// With an id of its own: stored pending, dispatched, then its
			// fate is stored (Store.SetEventFate).
			{&engine.Event{ID: "client-1", Type: "deploy.finished", Data: map[string]any{"env": "dev", "n": 9}},
				engine.EventFate{Rejected: []string{"prod"}, Runs: []engine.FateRun{{Hook: "big"}}},
				"1 run(s); rejected by where: of hook prod"},
			{&engine.Event{Type: "deploy.finished", Data: map[string]any{"mine": true}},
				engine.EventFate{ClaimedBy: "router"},
				"claimed by handler router"},
			// It starts one run at once: stored with that run's start.
			{&engine.Event{Type: "deploy.started"},
				engine.EventFate{Runs: []engine.FateRun{{Hook: "audit"}}},
				"1 run(s)"},
		}
		for _, c := range cases {
			em, err := hs.eng.EmitReport(ctx, c.ev)
			if err != nil {
				t.Fatalf("emit %s: %v", c.ev.Type, err)
			}
			hs.settle()
			for i, r := range em.Runs {
				c.want.Runs[i].ID = r.ID
			}
			if !reflect.DeepEqual(em.Fate, &c.want) {
				t.Errorf("emit %s %v: fate %+v, want %+v", c.ev.Type, c.ev.Data, em.Fate, &c.want)
			}
			if got := em.Fate.Text(c.ev.Type); got != c.text {
				t.Errorf("emit %s %v: %q, want %q", c.ev.Type, c.ev.Data, got, c.text)
			}
			stored, err := hs.db.ListEvents(ctx, c.ev.Type, 10)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(stored, func(ev *engine.Event) bool { return ev.ID == c.ev.ID })
			if i < 0 || !reflect.DeepEqual(stored[i].Fate, &c.want) {
				t.Errorf("stored %s: %+v, want fate %+v", c.ev.ID, stored, &c.want)
			}
		}
	})
}

// TestFireWithEventAppliesWhere: a fire with an event is judged by the
// hook's where: as the event would be: refused (GateWhere, no record)
// when it does not match; IgnoreWhere fires it anyway; Force does not
// (it skips the cooldown only); a fire without an event is not judged.
// Before, the where: was ignored and every fire ran.
func TestFireWithEventAppliesWhere(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hs := newHarness(t, fateHooks(t))
		defer hs.stop()
		dev := map[string]any{"env": "dev", "n": 1}
		for _, name := range []string{"prod", "big"} {
			for _, opt := range []engine.FireOptions{{Event: dev}, {Event: dev, Force: true}} {
				_, err := hs.fire(name, opt)
				var g *engine.GateError
				if !errors.As(err, &g) || g.Gate != engine.GateWhere {
					t.Fatalf("fire %s with %v (force %v): %v, want refused by where", name, dev, opt.Force, err)
				}
			}
			if runs := hs.runs(name); len(runs) != 0 {
				t.Errorf("%s: a where: refusal left %d records", name, len(runs))
			}
		}
		_, err := hs.fire("prod", engine.FireOptions{Event: dev})
		if want := `where: the event does not match hook prod's where: {env: prod}; --ignore-where fires it anyway`; err == nil || err.Error() != want {
			t.Errorf("refusal: %v\nwant %s", err, want)
		}
		_, err = hs.fire("big", engine.FireOptions{Event: dev})
		if want := `where: the event does not match hook big's where: event.n > 5; --ignore-where fires it anyway`; err == nil || err.Error() != want {
			t.Errorf("refusal: %v\nwant %s", err, want)
		}

		if _, err := hs.fire("prod", engine.FireOptions{Event: dev, IgnoreWhere: true}); err != nil {
			t.Fatalf("fire --ignore-where: %v", err)
		}
		hs.settle()
		if _, err := hs.fire("big", engine.FireOptions{}); err != nil {
			t.Fatalf("fire without an event: %v", err)
		}
		hs.settle()
		if _, err := hs.fire("big", engine.FireOptions{Event: map[string]any{"n": 6}}); err != nil {
			t.Errorf("fire big with a matching event: %v", err)
		}
		hs.settle()
		if n := len(hs.runs("big")); n != 2 {
			t.Errorf("big: %d runs, want 2", n)
		}
	})
}

func TestNearestTypes(t *testing.T) {
	t.Parallel()
	patterns := []string{"deploy.finished", "deploy.started", "deploy.*", "ci.build.done", "x"}
	for _, c := range []struct {
		typ  string
		want []string
	}{
		{"deploy.finishd", []string{"deploy.finished"}},
		{"deploy.start", []string{"deploy.started"}},
		{"deplo.*", []string{"deploy.*"}},
		{"ci.buld.done", []string{"ci.build.done"}},
		{"y", []string{"x"}},
		{"payment.received", []string{}},
	} {
		if got := engine.NearestTypes(c.typ, patterns); !slices.Equal(got, c.want) {
			t.Errorf("NearestTypes(%q) = %q, want %q", c.typ, got, c.want)
		}
	}
}
