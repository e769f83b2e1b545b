package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/llm/llmtest"
)

// collector is a real OpenTelemetry Collector (internal/otelcol) taking
// OTLP/HTTP on a loopback port and writing what it gets to a file.
type collector struct {
	endpoint string
	out      string
}

func startCollector(t *testing.T) *collector {
	t.Helper()
	bin := testtool.Otelcol(t)
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := &collector{endpoint: "http://" + addr, out: filepath.Join(dir, "traces.json")}
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
exporters:
  file:
    path: %s
    flush_interval: 50ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
`, addr, c.out)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", "file:"+cfgPath)
	log := &logBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	waitFor(t, "the collector to listen", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}, log.String)
	return c
}

// otlpSpan is a span as the collector's file exporter writes it (OTLP
// JSON).
type otlpSpan struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Attributes   []struct {
		Key   string         `json:"key"`
		Value map[string]any `json:"value"`
	} `json:"attributes"`
	Events []struct {
		Name string `json:"name"`
	} `json:"events"`
	Links []struct {
		TraceID    string `json:"traceId"`
		SpanID     string `json:"spanId"`
		Attributes []struct {
			Key   string         `json:"key"`
			Value map[string]any `json:"value"`
		} `json:"attributes"`
	} `json:"links"`
	Status struct {
		Code int `json:"code"`
	} `json:"status"`
}

// startedBy reports whether s links to the span of run, the run that
// started it (hookd.link=started_by).
func (s *otlpSpan) startedBy(run *otlpSpan) bool {
	for _, l := range s.Links {
		for _, a := range l.Attributes {
			if a.Key == "hookd.link" && a.Value["stringValue"] == "started_by" && l.TraceID == run.TraceID && l.SpanID == run.SpanID {
				return true
			}
		}
	}
	return false
}

// attr is the span's attribute k as text ("" when it has none).
func (s *otlpSpan) attr(k string) string {
	for _, a := range s.Attributes {
		if a.Key == k {
			for _, v := range a.Value {
				b, _ := json.Marshal(v)
				return strings.Trim(string(b), `"`)
			}
		}
	}
	return ""
}

// spans reads every span the collector wrote so far.
func (c *collector) spans(t *testing.T) []*otlpSpan {
	t.Helper()
	f, err := os.Open(c.out)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []*otlpSpan
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []*otlpSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			continue // a line being written
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// TestTracesToCollector: with otel: in hookd.yaml, a run that gathers with
// a shell step, calls the model, whose tool call runs, then answers,
// reaches a real OpenTelemetry Collector as one trace — the run's span,
// and under it a span per step, per model call (with the GenAI
// attributes) and per tool call — and a trigger the cooldown refuses as a
// trace of one span with the refusal. No attribute holds the hook's
// secret, though its step printed it, the model repeated it and
// otel.content is on. The fired run continues the caller's trace its
// --traceparent names. A run another run started links to that run's
// span: fired by the model's fire_hook, and chained on its
// hook.run.completed. A run's step gets the run's span as $TRACEPARENT,
// and `hookd emit` with that $TRACEPARENT (or --traceparent) starts runs
// under it; the API refuses a malformed traceparent header.
func TestTracesToCollector(t *testing.T) {
	const secret = "s3cr3t-trace-7Qx9"
	col := startCollector(t)
	model := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "call_read", Name: "read_file", Args: `{"path":"notes.txt"}`},
			llmtest.ToolCall{ID: "call_fire", Name: "fire_hook", Args: `{"hook":"fired"}`}),
		llmtest.Reply{Content: "The notes are fine; the step said " + secret, Usage: &llmtest.Usage{Prompt: 40, Completion: 7}},
	)
	defer model.Close()
	e := newEnv(t, fmt.Sprintf("llm:\n  model: test-model\n  base_url: %s\notel:\n  endpoint: %s\n  content: true\n",
		model.BaseURL(), col.endpoint), nil)
	e.write("hooks.d/triage.yaml", `cooldown: 1h
secrets: [TRACE_SECRET]
steps:
  - name: gather
    type: shell
    secrets: [TRACE_SECRET]
    command: echo "gathered $TRACE_SECRET"
prompt: "Read the notes. {{step_0}}"
tools: [read_file, fire_hook: {hooks: [fired]}]
`)
	e.write("notes.txt", "all is well\n")
	// fired is started by triage's model, and prints its $TRACEPARENT;
	// chained by fired's end; emitted by the events `hookd emit` sends.
	e.write("hooks.d/fired.yaml", `skip_llm: true
steps:
  - type: shell
    command: 'echo "$TRACEPARENT"'
`)
	e.write("hooks.d/chained.yaml", `trigger: {event: hook.run.completed, where: {hook: fired}}
skip_llm: true
steps:
  - type: shell
    command: "true"
`)
	e.write("hooks.d/emitted.yaml", `trigger: {event: traced.step}
skip_llm: true
steps:
  - type: shell
    command: "true"
`)
	// batch's first run waits for the file go; the fires meanwhile are
	// coalesced into one pending run (overlap: queue).
	e.write("hooks.d/batch.yaml", `overlap: queue
skip_llm: true
steps:
  - type: shell
    command: 'while [ ! -e go ]; do sleep 0.02; done'
`)
	e.environ = []string{"TRACE_SECRET=" + secret}
	d := e.serve()
	const caller, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	if r := e.run("fire", "triage", "--traceparent", "01-bogus"); r.code != exitUsage || !strings.Contains(r.stderr, "traceparent must be") {
		t.Fatalf("a malformed traceparent was not refused:\n%s", r)
	}
	e.must(0, "fire", "triage", "--wait", "--traceparent", "00-"+caller+"-"+callerSpan+"-01")
	var fired *engine.Run
	waitFor(t, "the runs fired and chained", func() bool {
		f, c := e.listRuns("fired"), e.listRuns("chained")
		if len(f) == 1 && len(c) == 1 && f[0].Status == engine.StatusCompleted && c[0].Status == engine.StatusCompleted {
			fired = f[0]
		}
		return fired != nil
	}, func() string { return fmt.Sprintf("%+v %+v", e.listRuns("fired"), e.listRuns("chained")) })
	stepTrace := strings.TrimSpace(e.getRun(fired.ID).Steps[0].Output) // the fired run's $TRACEPARENT
	if _, err := engine.ParseTraceParent(stepTrace); err != nil {
		t.Fatalf("the fired run's step printed $TRACEPARENT %q: %v", stepTrace, err)
	}
	// What a step's `hookd emit` does with it: from $TRACEPARENT, and
	// from --traceparent (which wins).
	const emitTrace = "7bf92f3577b34da6a3ce929d0e0e4736"
	environ := e.environ
	e.environ = append(slices.Clone(environ), "TRACEPARENT="+stepTrace)
	e.must(0, "emit", "traced.step", "--wait")
	e.must(0, "emit", "traced.step", "--wait", "--traceparent", "00-"+emitTrace+"-00f067aa0ba902b7-01")
	e.environ = append(slices.Clone(environ), "TRACEPARENT=bogus")
	if r := e.run("emit", "traced.step"); r.code != exitUsage || !strings.Contains(r.stderr, "traceparent must be") {
		t.Errorf("a malformed $TRACEPARENT was not refused by emit:\n%s", r)
	}
	e.environ = environ
	// The API refuses a malformed traceparent header, naming the form.
	api := e.socketClient()
	for path, req := range map[string]map[string]any{"/v1/events": {"type": "traced.step"}, "/v1/hooks/emitted/fire": {}} {
		code, body := api.call("POST", path, req, "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7")
		if code != http.StatusBadRequest || !strings.Contains(string(body), "traceparent must be 00-TRACEID-PARENTID-FLAGS") {
			t.Errorf("POST %s with a malformed traceparent: %d %s; want 400 naming the form", path, code, body)
		}
	}
	refused := e.run("fire", "triage")
	if refused.code != exitRefused {
		t.Fatalf("the second fire was not refused by the cooldown:\n%s", refused)
	}
	const queued2, queued3 = "5bf92f3577b34da6a3ce929d0e0e4736", "6bf92f3577b34da6a3ce929d0e0e4736"
	e.must(0, "fire", "batch")
	e.must(0, "fire", "batch", "--traceparent", "00-"+queued2+"-00f067aa0ba902b7-01")
	e.must(0, "fire", "batch", "--traceparent", "00-"+queued3+"-00f067aa0ba902b7-01")
	e.write("go", "")
	waitFor(t, "batch's two runs", func() bool {
		done := 0
		for _, r := range e.listRuns("batch") {
			if r.Status == engine.StatusCompleted {
				done++
			}
		}
		return done == 2
	}, func() string { return fmt.Sprintf("%+v", e.listRuns("batch")) })
	d.signal(syscall.SIGTERM) // the exporter sends what it holds at the stop
	d.wait()

	var spans []*otlpSpan
	want := map[string]int{"run triage": 2, "run batch": 2, "run fired": 1, "run chained": 1, "run emitted": 2,
		"chat test-model": 2, "execute_tool read_file": 1, "execute_tool fire_hook": 1}
	waitFor(t, "the runs' spans at the collector", func() bool {
		spans = col.spans(t)
		n := map[string]int{}
		for _, s := range spans {
			n[s.Name]++
		}
		for name, w := range want {
			if n[name] < w {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("%v", names(col.spans(t))) })

	byName := map[string][]*otlpSpan{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		for _, a := range s.Attributes {
			if b, _ := json.Marshal(a.Value); strings.Contains(string(b), secret) {
				t.Errorf("span %q attribute %s holds the secret: %s", s.Name, a.Key, b)
			}
		}
	}
	// The run the two fires were coalesced into is in, or links to,
	// both callers' traces.
	batch := byName["run batch"]
	if len(batch) != 2 {
		t.Fatalf("%d batch runs' spans, want 2: %v", len(batch), names(spans))
	}
	traces := map[string]string{}
	for _, s := range batch {
		traces[s.TraceID] = "its trace"
		for _, l := range s.Links {
			traces[l.TraceID] = "a link"
		}
	}
	if traces[queued2] == "" || traces[queued3] == "" {
		t.Errorf("the coalesced run's span is in or links to %v, want both fires' traces %s and %s", traces, queued2, queued3)
	}
	roots := byName["run triage"]
	if len(roots) != 2 {
		t.Fatalf("%d run spans, want 2 (the run and the refused trigger): %v", len(roots), names(spans))
	}
	var run, refusal *otlpSpan
	for _, r := range roots {
		if r.attr("hookd.status") == "completed" {
			run = r
		} else {
			refusal = r
		}
	}
	if run == nil || refusal == nil || refusal.attr("hookd.gate") != "cooldown" || len(refusal.Events) != 1 || refusal.Events[0].Name != "trigger refused" {
		t.Fatalf("the run and the refusal: %+v %+v", run, refusal)
	}
	if run.TraceID != caller || run.ParentSpanID != callerSpan || !strings.Contains(run.attr("hookd.answer"), "[REDACTED") {
		t.Errorf("the run's span: trace %q, parent %q (want the caller's %s, %s), answer %q", run.TraceID, run.ParentSpanID,
			caller, callerSpan, run.attr("hookd.answer"))
	}
	if refusal.TraceID == caller || refusal.ParentSpanID != "" {
		t.Errorf("the refused fire, which had no traceparent, joined a trace: %q, parent %q", refusal.TraceID, refusal.ParentSpanID)
	}
	// The run triage's model fired links to triage's run, in a trace of
	// its own; the run chained on its end links to it; the runs of the
	// events `hookd emit` sent with its step's $TRACEPARENT are under its
	// span, or in the trace --traceparent named.
	firedSpan, chainedSpan := byName["run fired"][0], byName["run chained"][0]
	if !firedSpan.startedBy(run) || firedSpan.TraceID == run.TraceID || firedSpan.ParentSpanID != "" {
		t.Errorf("the run fire_hook started: trace %s, parent %q, links %+v; want a trace of its own linked to the triage run's span %s/%s",
			firedSpan.TraceID, firedSpan.ParentSpanID, firedSpan.Links, run.TraceID, run.SpanID)
	}
	if !chainedSpan.startedBy(firedSpan) {
		t.Errorf("the run chained on hook.run.completed links to %+v, want the fired run's span %s/%s", chainedSpan.Links, firedSpan.TraceID, firedSpan.SpanID)
	}
	if want := "00-" + firedSpan.TraceID + "-" + firedSpan.SpanID + "-01"; stepTrace != want {
		t.Errorf("the fired run's step got TRACEPARENT=%s, want its run's span %s", stepTrace, want)
	}
	var underStep, underFlag bool
	for _, s := range byName["run emitted"] {
		underStep = underStep || s.TraceID == firedSpan.TraceID && s.ParentSpanID == firedSpan.SpanID
		underFlag = underFlag || s.TraceID == emitTrace && s.ParentSpanID == "00f067aa0ba902b7"
	}
	if !underStep || !underFlag {
		t.Errorf("the emitted runs: under the step's $TRACEPARENT %v, under --traceparent %v; want both", underStep, underFlag)
	}
	for _, name := range []string{"step step_0 (gather)", "chat test-model", "execute_tool read_file", "execute_tool fire_hook"} {
		ss := byName[name]
		if len(ss) == 0 {
			t.Errorf("no span %q: %v", name, names(spans))
			continue
		}
		for _, s := range ss {
			if s.TraceID != run.TraceID || s.ParentSpanID != run.SpanID {
				t.Errorf("span %q is not a child of the run's span", name)
			}
		}
	}
	chats := byName["chat test-model"]
	if len(chats) != 2 {
		t.Fatalf("%d model call spans, want 2", len(chats))
	}
	last := chats[1]
	if chats[0].attr("gen_ai.response.finish_reasons") == "[\"stop\"]" {
		last = chats[0]
	}
	for k, want := range map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "test-model",
		"gen_ai.usage.input_tokens": "40", "gen_ai.usage.output_tokens": "7",
	} {
		if got := last.attr(k); got != want {
			t.Errorf("the answering model call's %s = %q, want %q", k, got, want)
		}
	}
	if tool := byName["execute_tool read_file"]; len(tool) > 0 && (tool[0].attr("gen_ai.tool.call.id") != "call_read" || tool[0].attr("hookd.tool.outcome") != "ok") {
		t.Errorf("the tool call's span: id %q, outcome %q", tool[0].attr("gen_ai.tool.call.id"), tool[0].attr("hookd.tool.outcome"))
	}
}

func names(spans []*otlpSpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// TestTracesFromEnvironment: with no otel: in hookd.yaml, the standard
// OTEL_EXPORTER_OTLP_ENDPOINT alone turns export on, and OTEL_SERVICE_NAME
// names the service.
func TestTracesFromEnvironment(t *testing.T) {
	col := startCollector(t)
	e := newEnv(t, "", map[string]string{"hello.yaml": "skip_llm: true\nsteps:\n  - type: shell\n    command: echo hi\n"})
	e.environ = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.endpoint, "OTEL_SERVICE_NAME=hookd-env"}
	d := e.serve()
	r := e.must(0, "fire", "hello", "--wait", "--json")
	var run engine.Run
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil || run.ID == "" {
		t.Fatalf("decode the run: %v\n%s", err, r)
	}
	d.signal(syscall.SIGTERM)
	d.wait()
	waitFor(t, "the run's span at the collector", func() bool {
		for _, s := range col.spans(t) {
			if s.Name == "run hello" && s.attr("hookd.run.id") == run.ID {
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("%v", names(col.spans(t))) })
	b, err := os.ReadFile(col.out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `{"key":"service.name","value":{"stringValue":"hookd-env"}}`) {
		t.Errorf("the collector got no resource with service.name hookd-env:\n%s", b)
	}
}
