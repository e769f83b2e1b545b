package metrics

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type fakeSource struct {
	sum     engine.Summary
	overdue []string
	err     error
}

func (f *fakeSource) Summary(context.Context) (engine.Summary, error) { return f.sum, f.err }
func (f *fakeSource) Overdue(_ context.Context, grace time.Duration) ([]string, error) {
	return f.overdue, f.err
}

// runEv is the event the engine publishes for run.
func runEv(run *engine.Run) *engine.Event { return engine.RunEvent(run) }

// scrape serves the metrics over HTTP and parses the text format back.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse metrics: %v", err)
	}
	return fams
}

// value returns the value of the metric of family name with the labels.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			return m.GetUntyped().GetValue()
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}

func TestObserveAndScrape(t *testing.T) {
	src := &fakeSource{
		sum: engine.Summary{InFlight: []string{"a", "b"}, Queued: []string{"c"},
			Retries: []engine.RetryInfo{{Hook: "h", RunID: "r2", RetryOf: "r1", Attempt: 2, Attempts: 3}},
			Broken:  []engine.BrokenFile{{File: "hooks.d/a.yaml", Hook: "a", Errors: []string{"hooks.d/a.yaml:1: x"}}, {File: "hooks.d/b.yaml", Hook: "b"}}},
		overdue: []string{"late"},
	}
	m := New(src, time.Minute, 0)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ran := func(run *engine.Run, d time.Duration) *engine.Run {
		run.StartedAt, run.FinishedAt = start, start.Add(d)
		return run
	}
	late := runEv(ran(&engine.Run{Hook: "h", Status: engine.StatusRunning, Trigger: "schedule"}, 0))
	late.Outcome.Lateness, late.Outcome.Scheduled = 12500*time.Microsecond, true
	for _, ev := range []*engine.Event{
		late,
		runEv(ran(&engine.Run{Hook: "h", Status: engine.StatusRunning, Trigger: "manual"}, 0)),
		runEv(ran(&engine.Run{Hook: "h", Status: engine.StatusCompleted, Tokens: engine.Tokens{Prompt: 100, Completion: 20, Known: true},
			Tools: []engine.ToolUse{{Name: "read_file", Tool: "read_file", Outcome: engine.ToolOK},
				{Name: "read_file", Tool: "read_file", Outcome: engine.ToolError},
				{Name: "write_file", Tool: "write_file", Outcome: engine.ToolDenied, DeniedBy: "guard"},
				{Name: "rm_rf", Outcome: engine.ToolUnknown}}}, 1500*time.Millisecond)),
		runEv(ran(&engine.Run{Hook: "h", Status: engine.StatusFailed, Cause: engine.CauseStepFailed,
			Attempt: 1, Attempts: 3, Retry: &engine.RetryPlan{RunID: "r2", Attempt: 2, At: start}}, 200*time.Millisecond)),
		runEv(&engine.Run{Hook: "h", Status: engine.StatusSkipped, Gate: engine.GateInFlight, Reason: "in_flight: run X was still running"}),
		runEv(&engine.Run{Hook: "h", Status: engine.StatusSkipped, Gate: engine.GateCooldown, Reason: "cooldown: 3s left"}),
		runEv(ran(&engine.Run{Hook: "h", Status: engine.StatusCompleted, Cause: engine.CauseShortCircuit,
			Reason: "short-circuit: step_0 (tests): exit code 0"}, 30*time.Millisecond)),
		runEv(&engine.Run{Hook: "g", Status: engine.StatusDropped, Gate: engine.GateQueueFull, Reason: "queue_full: 100 runs already wait"}),
		// Not the engine's: counted as an event only.
		{Type: engine.EventRunFailed, Source: "hook:x", Data: map[string]any{"hook": "h", "status": "failed"}},
		{Type: "deploy.finished", Source: "api"},
	} {
		m.Observe(ev)
	}
	m.Notification(NotifyDelivered)
	m.Notification(NotifyUndeliverable)

	fams := scrape(t, m)
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"hookd_runs_total", []string{"hook", "h", "status", "completed"}, 2},
		{"hookd_runs_total", []string{"hook", "h", "status", "failed"}, 1},
		{"hookd_runs_total", []string{"hook", "h", "status", "skipped"}, 2},
		{"hookd_runs_total", []string{"hook", "g", "status", "dropped"}, 1},
		{"hookd_skips_total", []string{"hook", "h", "reason", "in_flight"}, 1},
		{"hookd_skips_total", []string{"hook", "h", "reason", "cooldown"}, 1},
		{"hookd_short_circuits_total", []string{"hook", "h"}, 1},
		{"hookd_drops_total", []string{"hook", "g", "reason", "queue_full"}, 1},
		{"hookd_run_duration_seconds", []string{"hook", "h"}, 3}, // completed, failed, short-circuited
		{"hookd_fire_lateness_seconds", []string{"hook", "h"}, 1},
		{"hookd_model_tokens_total", []string{"hook", "h", "kind", "prompt"}, 100},
		{"hookd_model_tokens_total", []string{"hook", "h", "kind", "completion"}, 20},
		{"hookd_tool_calls_total", []string{"tool", "read_file", "outcome", "ok"}, 1},
		{"hookd_tool_calls_total", []string{"tool", "read_file", "outcome", "error"}, 1},
		{"hookd_tool_calls_total", []string{"tool", "write_file", "outcome", "denied"}, 1},
		{"hookd_tool_calls_total", []string{"tool", "rm_rf", "outcome", "unknown"}, 1},
		{"hookd_events_total", []string{"source", "engine"}, 8},
		{"hookd_events_total", []string{"source", "hook"}, 1},
		{"hookd_events_total", []string{"source", "api"}, 1},
		{"hookd_notifications_total", []string{"outcome", "delivered"}, 1},
		{"hookd_notifications_total", []string{"outcome", "undeliverable"}, 1},
		{"hookd_notifications_total", []string{"outcome", "dropped"}, 0},
		{"hookd_queue_depth", nil, 1},
		{"hookd_runs_in_flight", nil, 2},
		{"hookd_hooks_overdue", nil, 1},
		{"hookd_hook_overdue", []string{"hook", "late"}, 1},
		{"hookd_engine_up", nil, 1},
		{"hookd_retries_total", []string{"hook", "h"}, 1},
		{"hookd_retries_pending", nil, 1},
		{"hookd_hook_files_broken", nil, 2},
	}
	for _, c := range checks {
		if got := value(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	h := fams["hookd_run_duration_seconds"].GetMetric()[0].GetHistogram()
	if sum := h.GetSampleSum(); sum < 1.729 || sum > 1.731 {
		t.Errorf("duration sum %v, want 1.73", sum)
	}
	if l := fams["hookd_fire_lateness_seconds"].GetMetric()[0].GetHistogram().GetSampleSum(); l != 0.0125 {
		t.Errorf("lateness sum %v, want 0.0125", l)
	}
	if fams["go_goroutines"] == nil {
		t.Error("no Go runtime metrics")
	}

	src.err = errors.New("engine stopped")
	fams = scrape(t, m)
	if got := value(t, fams, "hookd_engine_up"); got != 0 {
		t.Errorf("engine_up = %v when the engine does not answer", got)
	}
	if fams["hookd_queue_depth"] != nil {
		t.Error("queue_depth reported without an answer from the engine")
	}
}
