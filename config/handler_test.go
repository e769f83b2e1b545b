package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

func TestParseHandler(t *testing.T) {
	t.Parallel()
	h, err := ParseHandler(strings.NewReader(`on: tool:call:before
match: {hook: "deploy-*", tool: "^run_command$"}
command: [sh, -c, "exit 0"]
priority: 5
on_error: fail_closed
plugin: guard
`), "hooks.d/g.yaml", Options{DefaultName: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if h.On != engine.PointToolCallBefore || h.Label != "g" || h.Priority != 5 || !h.FailClosed || h.Plugin != "guard" ||
		h.Timeout != DefaultHandlerTimeout || !h.Matches("deploy-web", "run_command") || h.Matches("triage", "run_command") ||
		h.Matches("deploy-web", "read_file") || h.Line != 1 {
		t.Errorf("%+v", h)
	}
}

func TestParseHandlerErrors(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"on: run:during\ncommand: [x]\n":                             `h.yaml:1: on: unknown lifecycle point "run:during"`,
		"on: run:before\n":                                           "h.yaml:1: command: required",
		"on: run:before\ncommand: []\n":                              "h.yaml:2: command: must be a non-empty list",
		"on: run:before\ncommand: [x]\ntimeout: -1s\n":               "h.yaml:3: timeout: must be > 0 (got -1s)",
		"on: run:before\ncommand: [x]\non_error: ignore\n":           `h.yaml:3: on_error: must be fail_open or fail_closed (got "ignore")`,
		"on: run:after\ncommand: [x]\non_error: fail_closed\n":       `h.yaml:3: on_error: fail_closed has no effect at run:after`,
		"on: run:before\ncommand: [x]\nmatch: {tool: x}\n":           "h.yaml:3: match.tool: only tool:call:before and tool:call:after",
		"on: tool:call:before\ncommand: [x]\nmatch: {tool: \"(\"}\n": "h.yaml:3: match.tool: bad regexp",
		"on: run:before\ncommand: [x]\ntrigger: {every: 1m}\n":       "h.yaml:3: trigger: unknown field",
		"on: run:before\ncommand: [x]\nenv_passthrough: [a-b]\n":     `h.yaml:3: env_passthrough[0]: "a-b" is not an environment variable name`,
	} {
		_, err := ParseHandler(strings.NewReader(src), "h.yaml", Options{DefaultName: "h"})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}

func TestLoadDirAllHandlers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a-hook.yaml"), []byte("trigger: {every: 1m}\nsteps: [{type: shell, command: echo}]\nskip_llm: true\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "guard.yaml"), []byte("on: tool:call:before\ncommand: [sh]\ntimeout: 2s\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("on: tool:call:before\n"), 0o644)
	hooks, hs, errs := LoadDirAll(dir, Options{})
	if len(hooks) != 1 || len(hs) != 1 || hs[0].Label != "guard" || hs[0].Timeout != 2*time.Second {
		t.Fatalf("hooks %d handlers %+v", len(hooks), hs)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "bad.yaml:1: command: required") {
		t.Errorf("errs %v", errs)
	}
	if hs[0].Dir != filepath.Dir(dir) {
		t.Errorf("dir %s", hs[0].Dir)
	}
}

// TestLoadDirAllDuplicateHandlerLabel: handler labels are ids, so two
// handlers with one label at one point are a load error on the later
// file, at its label line; the same label at another point is fine.
func TestLoadDirAllDuplicateHandlerLabel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "on: tool:call:before\nlabel: audit\ncommand: [sh]\n")
	write("b.yaml", "on: tool:call:before\ncommand: [sh]\nlabel: audit\n")
	write("c.yaml", "on: run:after\nlabel: audit\ncommand: [sh]\n")
	// The default label is the file name: guard.json and guard.yaml collide.
	write("guard.json", `{"on": "run:before", "command": ["sh"]}`)
	write("guard.yaml", "on: run:before\ncommand: [sh]\n")
	_, hs, errs := LoadDirAll(dir, Options{})
	var got []string
	for _, h := range hs {
		got = append(got, filepath.Base(h.File))
	}
	if strings.Join(got, " ") != "a.yaml c.yaml guard.json" {
		t.Errorf("handlers loaded: %v", got)
	}
	want := []string{
		filepath.Join(dir, "b.yaml") + `:3: label: duplicate handler label "audit" at tool:call:before (first in ` + filepath.Join(dir, "a.yaml") + ":2)",
		filepath.Join(dir, "guard.yaml") + `:1: label: duplicate handler label "guard" at run:before (first in ` + filepath.Join(dir, "guard.json") + ":1)",
	}
	if len(errs) != len(want) {
		t.Fatalf("errs %v", errs)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("err %d: %v\nwant %s", i, errs[i], w)
		}
	}
}
