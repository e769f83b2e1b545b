package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/sandbox"
)

func init() {
	// A step kind that starts processes, as shell does.
	engine.RegisterStep("test_process", engine.DeclaredKind{Starts: engine.ProcessesDeclared,
		Build: func(*engine.StepDef, engine.Decoder) (engine.Step, error) { return nil, nil }})
}

// uncontained is the status of a machine where files cannot be confined
// (no Landlock) and limits cannot be enforced.
var uncontained = sandbox.Status{Files: "unconfined: Landlock is not available", FilesOK: false,
	Network: "network namespace", NetworkOK: true, Limits: "not enforceable (no cgroup controllers)", LimitsOK: false}

// processHook is a steps-only hook whose one step starts processes
// (test_process) and counts its runs in ran.
func processHook(name string, ran *atomic.Int32) *engine.Hook {
	h := newHook(name)
	h.Steps = []*engine.StepDef{{Index: 0, Type: "test_process", Step: funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
		ran.Add(1)
		return &engine.StepResult{}, nil
	})}}
	return h
}

// TestSandboxUnavailableGate: where containment is missing, a hook that
// starts processes from an event is refused and recorded skipped
// (sandbox_unavailable) without running a step; a hook fired by hand, and
// an event hook that starts no process, run; sandbox: off runs them all.
// A hook whose limits cannot be enforced runs, with a note saying so.
func TestSandboxUnavailableGate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		status  sandbox.Status
		refused bool
	}{
		{"uncontained", uncontained, true},
		{"no network", sandbox.Status{FilesOK: true, Network: "unconfined", Limits: "none"}, true},
		{"off", sandbox.Status{Off: true}, false},
		{"contained", sandbox.Status{FilesOK: true, NetworkOK: true, LimitsOK: true}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var evRan, manualRan, plainRan atomic.Int32
				ev := processHook("on-event", &evRan)
				ev.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "upload.*"}
				manual := processHook("by-hand", &manualRan)
				manual.Limits = sandbox.Limits{Pids: 10}
				plain := withSteps(newHook("no-process"), funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
					plainRan.Add(1)
					return &engine.StepResult{}, nil
				}))
				plain.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "upload.*"}
				st := c.status
				h := newHarness(t, []*engine.Hook{ev, manual, plain}, func(cfg *engine.Config) { cfg.Sandbox = &st })
				defer h.stop()

				em, err := h.eng.EmitReport(context.Background(), &engine.Event{Type: "upload.done"})
				if err != nil {
					t.Fatal(err)
				}
				m := h.mustFire("by-hand")
				h.settle()
				runs := h.runs("on-event")
				if len(runs) != 1 {
					t.Fatalf("on-event has %d runs, want 1", len(runs))
				}
				r := runs[0]
				if c.refused {
					if r.Status != engine.StatusSkipped || r.Gate != engine.GateSandboxUnavailable || evRan.Load() != 0 ||
						!strings.HasPrefix(r.Reason, "sandbox_unavailable: hook on-event starts processes from untrusted input") ||
						!strings.Contains(r.Reason, "sandbox: off") {
						t.Errorf("on-event: %s gate %q reason %q, step ran %d times; want skipped by sandbox_unavailable",
							r.Status, r.Gate, r.Reason, evRan.Load())
					}
					if len(em.Refused) != 1 || em.Refused[0].Gate.Gate != engine.GateSandboxUnavailable {
						t.Errorf("emit report: %+v", em.Refused)
					}
				} else if r.Status != engine.StatusCompleted || evRan.Load() != 1 {
					t.Errorf("on-event: %s (%s), step ran %d times; want completed", r.Status, r.Reason, evRan.Load())
				}
				if r := h.run(m.ID); r.Status != engine.StatusCompleted || manualRan.Load() != 1 {
					t.Errorf("by-hand: %s (%s); want completed", r.Status, r.Reason)
				}
				if r := h.runs("no-process"); len(r) != 1 || r[0].Status != engine.StatusCompleted || plainRan.Load() != 1 {
					t.Errorf("no-process: %+v; want one completed run", r)
				}
				notes := strings.Join(h.run(m.ID).Notes, "\n")
				switch {
				case st.Off && !strings.Contains(notes, "limits: pids 10 not enforced here: sandbox: off"),
					!st.Off && !st.LimitsOK && !strings.Contains(notes, "limits: pids 10 not enforced here: "+st.Limits),
					st.LimitsOK && !st.Off && notes != "":
					t.Errorf("by-hand notes %q", notes)
				}
			})
		})
	}
}
