package steps

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

type emitted struct {
	typ  string
	data map[string]any
}

func emitEnv(t *testing.T, event map[string]any, sink *[]emitted, em *engine.Emitted, err error) *engine.StepEnv {
	env := stepEnv(t, event)
	if em == nil {
		em = &engine.Emitted{}
	}
	env.Emit = func(_ context.Context, typ string, data map[string]any) (*engine.Emitted, error) {
		*sink = append(*sink, emitted{typ, data})
		return em, err
	}
	return env
}

func TestEmitNewErrors(t *testing.T) {
	newErrTests(t, "emit", []struct{ name, src, want string }{
		{"missing type", `data: {a: 1}`, "event_type: required"},
		{"empty segment", `event_type: deploy..done`, "segment 2 is empty"},
		{"trailing dot", `event_type: deploy.`, "segment 2 is empty"},
		{"wildcard", `event_type: deploy.*`, "invalid character '*'"},
		{"empty segment around a placeholder", `event_type: "deploy..{{event.x}}"`, "segment 2 is empty"},
		{"bad placeholder in data", "event_type: a\ndata: {x: [ok, '{{']}", "data.x[1]: unclosed placeholder"},
		{"unknown field", "event_type: a\ndtaa: {}", "dtaa"},
	})
}

func TestEmit(t *testing.T) {
	var sink []emitted
	em := &engine.Emitted{
		Runs: []*engine.Run{{ID: "run-a", Hook: "a", Status: engine.StatusRunning},
			{ID: "run-b", Hook: "b", Status: engine.StatusQueued, Reason: "max_concurrent: 4 runs in flight"}},
		Refused: []engine.Refusal{{Run: &engine.Run{ID: "run-c", Hook: "c", Status: engine.StatusSkipped},
			Gate: &engine.GateError{Gate: engine.GateFromTool, Hook: "c", Detail: "hook c does not accept that"}}},
	}
	event := map[string]any{"env": "prod", "n": 3.0, "obj": map[string]any{"k": "v"}}
	s := mustStep(t, "emit", `event_type: "deploy.{{event.env}}.checked"
data:
  env: "{{event.env}}"
  n: "{{event.n}}"
  obj: "{{event.obj}}"
  text: "n={{event.n}} in {{event.env}}"
  nested: {list: ["{{step_0}}", 7, true]}
`, 0)
	env := emitEnv(t, event, &sink, em, nil)
	env.Scope.Steps = []*engine.StepResult{{Index: 0, Output: "first"}}
	res, err := runStep(t, s, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink) != 1 || sink[0].typ != "deploy.prod.checked" {
		t.Fatalf("emitted %+v", sink)
	}
	d := sink[0].data
	if d["env"] != "prod" || d["n"] != 3.0 || d["text"] != "n=3 in prod" {
		t.Errorf("data %v", d)
	}
	if o, ok := d["obj"].(map[string]any); !ok || o["k"] != "v" {
		t.Errorf("obj %#v", d["obj"])
	}
	if l := d["nested"].(map[string]any)["list"].([]any); l[0] != "first" || l[1] != 7 || l[2] != true {
		t.Errorf("nested %v", l)
	}
	if res.Fields["event_type"] != "deploy.prod.checked" || field(res, "count") != 2 || !equalAny(res.Fields["runs"], []any{"run-a", "run-b"}) {
		t.Errorf("fields %v", res.Fields)
	}
	want := "emitted deploy.prod.checked: 2 run(s), 1 refused by a gate\nrun-a a (running)\nrun-b b (queued: max_concurrent: 4 runs in flight)\n" +
		"run-c c refused: from_tool: hook c does not accept that"
	if res.Output != want {
		t.Errorf("output %q\nwant   %q", res.Output, want)
	}
	ref := res.Fields["refused"].([]any)
	if len(ref) != 1 || !reflect.DeepEqual(ref[0], map[string]any{"hook": "c", "run_id": "run-c", "gate": engine.GateFromTool, "reason": "from_tool: hook c does not accept that"}) {
		t.Errorf("refused %v", res.Fields["refused"])
	}
}

func TestEmitErrors(t *testing.T) {
	tests := []struct {
		name, src string
		event     map[string]any
		emitErr   error
		noEmit    bool
		want      string
	}{
		{name: "type from event with empty segment", src: `event_type: "a.{{event.x}}"`, event: map[string]any{"x": "b..c"}, want: "event_type: event type \"a.b..c\": segment 3 is empty"},
		{name: "type from event with a wildcard", src: `event_type: "a.{{event.x}}"`, event: map[string]any{"x": "**"}, want: "invalid character"},
		{name: "missing placeholder", src: "event_type: a\ndata: {x: '{{event.missing}}'}", want: `data.x: {{event.missing}}: no field "missing"`},
		{name: "engine refuses", src: "event_type: a", emitErr: errors.New("engine: event chain too deep"), want: "emit a: engine: event chain too deep"},
		{name: "no publisher", src: "event_type: a", noEmit: true, want: "not available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sink []emitted
			s := mustStep(t, "emit", tt.src, 0)
			env := emitEnv(t, tt.event, &sink, nil, tt.emitErr)
			if tt.noEmit {
				env.Emit = nil
			}
			_, err := runStep(t, s, env)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want %q", err, tt.want)
			}
			if tt.emitErr == nil && len(sink) > 0 {
				t.Errorf("emitted %+v", sink)
			}
		})
	}
}

func TestEmitNoListeners(t *testing.T) {
	var sink []emitted
	s := mustStep(t, "emit", "event_type: nobody.listens", 0)
	res, err := runStep(t, s, emitEnv(t, nil, &sink, nil, nil))
	if err != nil || field(res, "count") != 0 || len(sink) != 1 || len(sink[0].data) != 0 {
		t.Errorf("err %v fields %v sink %+v", err, res.Fields, sink)
	}
}
