package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// testRoot is the project root the golden hooks resolve against.
const testRoot = "/project"

// parseTestFile parses a file of testdata as if it were hooks.d/NAME.
func parseTestFile(t *testing.T, path string) (*engine.Hook, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Base(path)
	return ParseHook(bytes.NewReader(data), "hooks.d/"+base,
		Options{Root: testRoot, DefaultName: strings.TrimSuffix(base, filepath.Ext(base))})
}

func hookFiles(t testing.TB, dir string) []string {
	var out []string
	for _, ext := range hookExts {
		m, err := filepath.Glob(filepath.Join("testdata", dir, "*"+ext))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Fatalf("no files in testdata/%s", dir)
	}
	return out
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	g := strings.TrimSuffix(path, filepath.Ext(path)) + ".golden"
	if *update {
		if err := os.WriteFile(g, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(g)
	if err != nil {
		t.Fatalf("%v (run go test ./config -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: got\n%s\nwant\n%s", path, got, want)
	}
}

// TestValidHooks parses each file of testdata/valid and compares a dump
// of the hook with its .golden file.
func TestValidHooks(t *testing.T) {
	t.Parallel()
	for _, path := range hookFiles(t, "valid") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			h, err := parseTestFile(t, path)
			if err != nil {
				t.Fatalf("unexpected error:\n%v", err)
			}
			golden(t, path, dump(t, h))
		})
	}
}

// TestInvalidHooks parses each file of testdata/invalid; its .golden file
// holds the expected errors, one per line.
func TestInvalidHooks(t *testing.T) {
	t.Parallel()
	for _, path := range hookFiles(t, "invalid") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			h, err := parseTestFile(t, path)
			if err == nil {
				t.Fatalf("no error; got hook %+v", h)
			}
			if h != nil {
				t.Errorf("got a hook with the error")
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.File == "" {
				t.Errorf("error %T does not hold a located *Error", err)
			}
			// The registered step kinds depend on what the test binary
			// links, so the golden files name them KINDS.
			got := strings.ReplaceAll(err.Error(), "(known: "+knownKinds()+")", "(known: KINDS)")
			got = strings.ReplaceAll(got, "(built-in: "+knownTools(), "(built-in: TOOLS")
			golden(t, path, got+"\n")
		})
	}
}

// llmView shows LLMConfig with on_truncated and tool_choice_rounds only
// when they are set.
type llmView struct {
	engine.LLMConfig
	OnTruncated      string `json:",omitempty"`
	ToolChoiceRounds string `json:",omitempty"`
}

// dump renders a hook for golden files, with durations as text.
func dump(t *testing.T, h *engine.Hook) string {
	t.Helper()
	type stepView struct {
		Index    int
		Name     string `json:",omitempty"`
		Type     string
		Line     int
		Timeout  string               `json:",omitempty"`
		Required bool                 `json:",omitempty"`
		Allow    bool                 `json:"AllowFailure,omitempty"`
		Skip     *engine.ShortCircuit `json:",omitempty"`
		Secrets  []string             `json:",omitempty"`
		Config   any                  `json:",omitempty"`
		Writes   []string             `json:",omitempty"`
		Network  string               `json:",omitempty"`
	}
	dur := func(d time.Duration) string {
		if d == 0 {
			return ""
		}
		return d.String()
	}
	trig := map[string]any{"Kind": string(h.Trigger.Kind), "String": h.Trigger.String()}
	tr := h.Trigger
	add := func(k string, v any, zero bool) {
		if !zero {
			trig[k] = v
		}
	}
	add("Every", dur(tr.Every), tr.Every == 0)
	add("Cron", tr.Cron, tr.Cron == "")
	add("Timezone", tr.Timezone, tr.Timezone == "")
	add("Jitter", dur(tr.Jitter), tr.Jitter == 0)
	add("OnMissed", tr.OnMissed, tr.OnMissed == "")
	add("MaxCatchup", tr.MaxCatchup, tr.MaxCatchup == 0)
	add("Event", tr.Event, tr.Event == "")
	add("Where", tr.Where, tr.Where == nil)
	add("Schedule", tr.Schedule != nil, tr.Schedule == nil)
	if tr.Location != nil {
		trig["Location"] = tr.Location.String()
	}
	if w := tr.Watch; w != nil {
		trig["Watch"] = map[string]any{
			"Paths": w.Paths, "Recursive": w.Recursive, "Extensions": w.Extensions,
			"Include": w.Include, "Ignore": w.Ignore, "Debounce": dur(w.Debounce),
			"MaxWait": dur(w.MaxWait), "Poll": w.Poll, "ScanOnStart": w.ScanOnStart,
		}
	}
	var steps []stepView
	for _, d := range h.Steps {
		v := stepView{Index: d.Index, Name: d.Name, Type: d.Type, Line: d.Line,
			Timeout: dur(d.Timeout), Required: d.Required, Allow: d.AllowFailure, Secrets: d.Secrets, Writes: d.Writes}
		if d.Network != nil {
			v.Network = d.Network.String()
		}
		if d.Skip != (engine.ShortCircuit{}) {
			sk := d.Skip
			v.Skip = &sk
		}
		if e, ok := d.Step.(*echoStep); ok {
			c := e.cfg
			v.Config = map[string]any{"Command": c.Command, "Text": c.Text, "Count": c.Count,
				"Wait": dur(c.Wait), "Headers": c.Headers, "Args": c.Args, "Nested": c.Nested}
		}
		if d.Step == nil {
			t.Errorf("step %s has no Step", d.Label())
		}
		steps = append(steps, v)
	}
	view := map[string]any{
		"Name": h.Name, "Description": h.Description, "Enabled": h.Enabled,
		"Trigger": trig, "Cooldown": dur(h.Cooldown), "Overlap": h.Overlap,
		"Timeout": dur(h.Timeout), "Workdir": h.Workdir, "Env": h.Env, "Secrets": h.Secrets,
		"Steps": steps, "System": h.System, "Prompt": h.Prompt, "LLM": llmView{h.LLM, h.LLM.OnTruncated, h.LLM.ToolChoiceRounds},
		"Budget": h.Budget, "Tools": h.Tools, "Plugins": h.Plugins, "PluginsSet": h.PluginsSet,
		"SkipLLM": h.SkipLLM, "Source": h.Source,
	}
	if h.Project != "" {
		view["Project"] = h.Project
	}
	if h.ToolSecrets != nil {
		view["ToolSecrets"] = h.ToolSecrets
	}
	if h.EnvPassthrough != nil {
		view["EnvPassthrough"] = h.EnvPassthrough
	}
	if h.WriteRoots != nil {
		view["WriteRoots"] = h.WriteRoots
	}
	if h.Writes != nil {
		view["Writes"] = h.Writes
	}
	if h.Reads != nil {
		view["Reads"] = h.Reads
	}
	if h.Network != nil {
		view["Network"] = h.Network.String()
	}
	if !h.Limits.IsZero() {
		view["Limits"] = h.Limits
	}
	if r := h.Retention; r.Runs != nil || r.KeepLast != nil {
		ret := map[string]any{}
		if r.Runs != nil {
			ret["Runs"] = r.Runs.String()
		}
		if r.KeepLast != nil {
			ret["KeepLast"] = *r.KeepLast
		}
		view["Retention"] = ret
	}
	if h.OnInterrupted != "" {
		view["OnInterrupted"] = h.OnInterrupted
	}
	if r := h.Retry; r.Attempts != 0 {
		view["Retry"] = map[string]any{"Attempts": r.Attempts, "Backoff": dur(r.Backoff), "MaxBackoff": dur(r.MaxBackoff),
			"On": r.On, "Notify": r.Notify}
	}
	b, err := json.MarshalIndent(view, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func TestErrorFormat(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    Error
		want string
	}{
		{Error{File: "hooks.d/triage.yaml", Line: 14, Field: "steps[2].timeout", Msg: "must be > 0 (got -1s)"},
			"hooks.d/triage.yaml:14: steps[2].timeout: must be > 0 (got -1s)"},
		{Error{File: "a.yaml", Line: 3, Msg: "syntax error: x"}, "a.yaml:3: syntax error: x"},
		{Error{File: "a.yaml", Err: os.ErrNotExist}, "a.yaml: file does not exist"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

func TestParseHookDefaults(t *testing.T) {
	t.Parallel()
	h, err := ParseHook(strings.NewReader("prompt: hi\n"), "x.yaml", Options{Root: "/p", DefaultName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "x" || !h.Enabled || h.Overlap != engine.OverlapSkip || h.Workdir != "/p" ||
		h.Trigger.Kind != engine.TriggerManual || h.PluginsSet || h.Plugins != nil || h.Timeout != 0 {
		t.Errorf("defaults: %+v", h)
	}
	if h.Source.Line != 1 || len(h.Source.Version) != 12 || h.Source.File != "x.yaml" {
		t.Errorf("source: %+v", h.Source)
	}
	// The same bytes give the same version; others another.
	h2, _ := ParseHook(strings.NewReader("prompt: hi\n"), "y.yaml", Options{DefaultName: "y"})
	h3, _ := ParseHook(strings.NewReader("prompt: ho\n"), "y.yaml", Options{DefaultName: "y"})
	if h2.Source.Version != h.Source.Version || h3.Source.Version == h.Source.Version {
		t.Errorf("versions: %s %s %s", h.Source.Version, h2.Source.Version, h3.Source.Version)
	}
	// No Root: the working directory.
	wd, _ := os.Getwd()
	if h2.Workdir != wd {
		t.Errorf("workdir %q, want %q", h2.Workdir, wd)
	}
	if _, err := ParseHook(strings.NewReader("prompt: hi\n"), "x.yaml", Options{}); err == nil ||
		err.Error() != "x.yaml:1: name: required" {
		t.Errorf("no name: %v", err)
	}
}

func TestPluginsAbsentVsEmpty(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		src  string
		set  bool
		want []string
	}{
		{"prompt: x\n", false, nil},
		{"plugins:\n", false, nil},
		{"plugins: []\n", true, []string{}},
		{"plugins: [safety]\n", true, []string{"safety"}},
	} {
		h, err := ParseHook(strings.NewReader(c.src), "p.yaml", Options{Root: "/p", DefaultName: "p"})
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		if h.PluginsSet != c.set || (h.Plugins == nil) != (c.want == nil) || len(h.Plugins) != len(c.want) {
			t.Errorf("%q: PluginsSet=%v Plugins=%#v", c.src, h.PluginsSet, h.Plugins)
		}
	}
}

func TestScheduleCompiled(t *testing.T) {
	t.Parallel()
	src := "trigger:\n  every: 2h\n  timezone: UTC\n"
	h, err := ParseHook(strings.NewReader(src), "s.yaml", Options{Root: "/p", DefaultName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if h.Trigger.Schedule == nil || h.Trigger.Location != time.UTC {
		t.Fatalf("trigger: %+v", h.Trigger)
	}
	t0 := time.Date(2024, 1, 1, 0, 30, 0, 0, time.UTC)
	next := h.Trigger.Schedule.Next(t0)
	if !next.After(t0) || next.Sub(t0) > 2*time.Hour {
		t.Errorf("Next(%v) = %v", t0, next)
	}
}

func TestKindErrorWrapped(t *testing.T) {
	t.Parallel()
	src := "steps:\n  - type: test_fail\n"
	_, err := ParseHook(strings.NewReader(src), "f.yaml", Options{Root: "/p", DefaultName: "f"})
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 2 || ce.Field != "steps[0]" || ce.Err == nil {
		t.Fatalf("got %#v", err)
	}
}

func TestReadError(t *testing.T) {
	t.Parallel()
	_, err := ParseHook(iotestErrReader{}, "r.yaml", Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "r.yaml: read: ") {
		t.Errorf("got %v", err)
	}
}

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

// TestLimits feeds an alias bomb: the loader stops early and keeps the
// error list short.
func TestLimits(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [\"{{x}}\", y, z, w, v, u, t, s, r, q]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%[1]d [*a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d]\n", i, i-1)
	}
	b.WriteString("steps:\n  - type: test_echo\n    command: *a8\n    args: *a8\n")
	_, err := ParseHook(strings.NewReader(b.String()), "b.yaml", Options{Root: "/p", DefaultName: "b"})
	var l Errors
	if !errors.As(err, &l) {
		t.Fatalf("got %v", err)
	}
	if len(l) > maxErrors+1 || !strings.HasSuffix(l[len(l)-1].Msg, "more errors not shown") {
		t.Errorf("%d errors, last %v", len(l), l[len(l)-1])
	}
}
