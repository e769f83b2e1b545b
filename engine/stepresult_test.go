package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// TestStepResultJSON: a result's typed fields are written in its "fields"
// object under the names placeholders use, and read back as the same
// typed values: an exit code that was an int is an int again, not a
// float64. A record written while they were map entries reads the same,
// and its duration_ms gives way to the engine's duration.
func TestStepResultJSON(t *testing.T) {
	t.Parallel()
	in := &engine.StepResult{Index: 1, Name: "fetch", Type: "test", Output: "out",
		ExitCode: new(12), StatusCode: 503, Count: new(3), TimedOut: true, Truncated: true,
		Fields: map[string]any{"stderr": "boom"}, Error: "exit 12",
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Duration: 1500 * time.Millisecond}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `"fields":{"count":3,"exit_code":12,"status_code":503,"stderr":"boom","timed_out":true,"truncated":true}`
	if !strings.Contains(string(b), want) {
		t.Errorf("JSON %s\nwant it to hold %s", b, want)
	}
	var out engine.StepResult
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, &out) {
		t.Errorf("round trip:\n got %#v\nwant %#v", out, *in)
	}

	old := `{"index":0,"name":"backup","type":"test","output":"","fields":{"exit_code":12,"duration_ms":7,"stderr":"x"},` +
		`"started":"2026-01-02T03:04:05Z","duration_ns":40000000}`
	var legacy engine.StepResult
	if err := json.Unmarshal([]byte(old), &legacy); err != nil {
		t.Fatal(err)
	}
	if legacy.ExitCode == nil || *legacy.ExitCode != 12 || !reflect.DeepEqual(legacy.Fields, map[string]any{"stderr": "x"}) {
		t.Errorf("legacy record: exit %v fields %v", legacy.ExitCode, legacy.Fields)
	}
	if v, ok := legacy.Field("exit_code"); !ok || v != 12 {
		t.Errorf("{{step_0.exit_code}} of a legacy record: %v (%T) %v", v, v, ok)
	}
	if _, ok := legacy.Field("count"); ok {
		t.Error("a result without a count has the field count")
	}
}

// TestStepsStoredOnce: the stored form of a step whose fields repeat its
// output (a shell step's stdout) holds the output once, and reads back as
// the result it was, the field again the output; the API's form
// (MarshalSteps, json.Marshal) still writes the field. The output is
// 64 KiB by default, 1 MiB under HOOKD_TEST_LONG=1.
func TestStepsStoredOnce(t *testing.T) {
	t.Parallel()
	out := strings.Repeat("0123456789abcdef", testtool.Count(1<<12, 1<<16))
	in := []*engine.StepResult{
		{Index: 0, Name: "dump", Type: "test", Output: out, ExitCode: new(0),
			Fields:  map[string]any{"stdout": out, "stderr": "", "command": "cat dump"},
			Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Duration: time.Second},
		{Index: 1, Name: "only", Type: "test", Output: "x", Fields: map[string]any{"content": "x"}},
		{Index: 2, Name: "empty", Type: "test", Fields: map[string]any{"stdout": ""}},
	}
	stored, err := engine.MarshalStepsStored(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) > len(out)+1024 {
		t.Errorf("the stored form of a %d-byte output is %d bytes", len(out), len(stored))
	}
	var back []*engine.StepResult
	if err := json.Unmarshal(stored, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, in) {
		t.Errorf("round trip of the stored form:\n got %+v\nwant %+v", back, in)
	}
	api, err := engine.MarshalSteps(in)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := json.Marshal(in)
	if string(api) != string(ref) || len(api) < 2*len(out) {
		t.Errorf("the API's form changed: %d bytes, json.Marshal %d", len(api), len(ref))
	}
}

func init() {
	// A kind whose results declare duration_ms; its steps are built by
	// the test.
	engine.RegisterStep("test_timed", engine.DeclaredKind{Fields: []string{"duration_ms", "exit_code"},
		Build: func(*engine.StepDef, engine.Decoder) (engine.Step, error) {
			return nil, errors.New("built by the test")
		}})
}

// TestStepDurationFieldOnTheEngineClock: the duration_ms field of a kind
// that declares one is the engine's duration, on its injected clock, not
// what the step measured itself, as the run runs and as it is stored.
func TestStepDurationFieldOnTheEngineClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var hs *harness
		var during any
		step := funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
			time.Sleep(90 * time.Second) // virtual: the step takes 90s on the engine's clock
			return &engine.StepResult{ExitCode: new(0), Fields: map[string]any{"duration_ms": int64(5)}}, nil
		})
		h := newHook("timed")
		h.Steps = []*engine.StepDef{{Index: 0, Type: "test_timed", Step: step}}
		h.SkipLLM, h.Prompt = false, "took {{step_0.duration_ms}} ms"
		hs = newHarness(t, []*engine.Hook{h}, func(c *engine.Config) {
			c.LLM = llmFunc(func(_ context.Context, req *engine.LLMRequest) error {
				during = req.Run.Prompt
				return nil
			})
		})
		defer hs.stop()
		r := hs.mustFire("timed")
		if _, err := hs.eng.Wait(context.Background(), r.ID); err != nil {
			t.Fatal(err)
		}
		hs.settle()
		st := hs.run(r.ID).Steps[0]
		if v, ok := st.Field("duration_ms"); !ok || v != int64(90000) || st.Duration != 90*time.Second {
			t.Errorf("stored: duration_ms %v (%T), duration %s; want 90000 and 90s", v, v, st.Duration)
		}
		if during != "took 90000 ms" {
			t.Errorf("the prompt read %q, want the engine's 90000 ms", during)
		}
	})
}

// llmFunc adapts a function to engine.LLM.
type llmFunc func(ctx context.Context, req *engine.LLMRequest) error

func (f llmFunc) Complete(ctx context.Context, req *engine.LLMRequest) error { return f(ctx, req) }
