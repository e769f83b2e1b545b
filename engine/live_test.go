package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
)

// texts joins the output chunks' texts and returns the run ends apart.
func texts(cs []engine.LiveChunk) (out []string, ends []engine.LiveChunk) {
	for _, c := range cs {
		if c.End {
			ends = append(ends, c)
			continue
		}
		out = append(out, c.Text)
	}
	return out, ends
}

// A subscriber that does not read loses chunks, which are counted and
// reported at the run's end; the step does not wait for it (the run ends
// while it has read nothing), a subscriber that reads gets every chunk,
// and nothing of the live output reaches the event log.
func TestLiveOutputSlowSubscriber(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		chunks := []string{"live-chunk-1\n", "live-chunk-2\n", "live-chunk-3\n"}
		hk := withSteps(newHook("live"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			if env.Output == nil {
				t.Error("a run's step has no Output")
				return &engine.StepResult{}, nil
			}
			for _, c := range chunks {
				env.Output("stdout", []byte(c))
			}
			return &engine.StepResult{Output: "done"}, nil
		}))
		h := newHarness(t, []*engine.Hook{hk, newHook("other")})
		defer h.stop()
		fast := h.eng.SubscribeOutput(engine.LiveFilter{Hook: "live"}, 0)
		defer fast.Close()
		slow := h.eng.SubscribeOutput(engine.LiveFilter{}, 1)
		defer slow.Close()
		other := h.eng.SubscribeOutput(engine.LiveFilter{Hook: "other"}, 0)
		defer other.Close()

		run := h.mustFire("live")
		final, err := h.eng.Wait(context.Background(), run.ID)
		if err != nil || final.Status != engine.StatusCompleted {
			t.Fatalf("run: %v %+v", err, final)
		}
		got, ends := texts(fast.Take())
		if strings.Join(got, "") != strings.Join(chunks, "") || len(ends) != 1 || ends[0].RunID != run.ID || ends[0].Dropped != 0 {
			t.Errorf("fast subscriber: %q, ends %+v; want every chunk and one end without drops", got, ends)
		}
		got, ends = texts(slow.Take())
		if len(got) != 1 || got[0] != chunks[0] || len(ends) != 1 || ends[0].Dropped != 2 {
			t.Errorf("slow subscriber (room for 1): %q, ends %+v; want the first chunk and an end with 2 dropped", got, ends)
		}
		if n := slow.Dropped(); n != 2 {
			t.Errorf("slow.Dropped() = %d, want 2", n)
		}
		if cs := other.Take(); len(cs) != 0 {
			t.Errorf("another hook's subscriber got %+v", cs)
		}
		h.logged()
		evs, err := h.db.EventsAfter(context.Background(), 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			b, _ := json.Marshal(ev)
			if strings.Contains(string(b), "live-chunk") {
				t.Errorf("live output stored in the event log: %s", b)
			}
		}
		if len(evs) == 0 {
			t.Error("no events stored: the check above proved nothing")
		}
	})
}

// A lifecycle handler called at a point of a run in flight gets the
// run's live output (Payload.Live), under "handler LABEL (POINT)", and
// the hook's redactor.
func TestLiveOutputHandler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := withSteps(newHook("live"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			return &engine.StepResult{Output: "done"}, nil
		}))
		hk.Secrets = []string{"LIVE_TOKEN"}
		h := newHarness(t, []*engine.Hook{hk}, func(c *engine.Config) { c.Environ = []string{"LIVE_TOKEN=tok-9f8e7d"} })
		defer h.stop()
		noRed := false
		h.eng.Lifecycle().On(engine.PointStepAfter, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			out, red := p.Live()
			if out == nil || red == nil {
				t.Error("a step:after handler of a run in flight has no live output or redactor")
				return engine.Decision{}, nil
			}
			noRed = red.String("tok-9f8e7d") == "tok-9f8e7d"
			out("stderr", []byte("from the handler\n"))
			return engine.Decision{}, nil
		}, engine.HandlerOptions{Label: "audit"})
		sub := h.eng.SubscribeOutput(engine.LiveFilter{Hook: "live"}, 0)
		defer sub.Close()
		run := h.mustFire("live")
		if _, err := h.eng.Wait(context.Background(), run.ID); err != nil {
			t.Fatal(err)
		}
		cs := sub.Take()
		if len(cs) != 2 || cs[0].Step != "handler audit (step:after)" || cs[0].Stream != "stderr" || cs[0].Text != "from the handler\n" || !cs[1].End {
			t.Errorf("chunks %+v; want the handler's line, then the run's end", cs)
		}
		if noRed {
			t.Error("the handler's redactor does not know the hook's secret")
		}
	})
}
