package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/llm/llmtest"
)

// withHookdOnPath returns the environment entry that puts the binary
// under test first on PATH, as the shipped guard runs `hookd guard`.
func withHookdOnPath() string {
	return "PATH=" + filepath.Dir(hookdBin) + string(os.PathListSeparator) + os.Getenv("PATH")
}

// TestAllowlistGuardBypasses runs the shipped allowlist guard
// (hooks.d/allow-commands.yaml, `hookd guard`) as a real command handler
// in the real daemon, against a hostile model that tries every known way
// around a denylist to delete a directory. Each call is denied, and the
// directory and its file survive; an allowed command runs.
func TestAllowlistGuardBypasses(t *testing.T) {
	guard, err := os.ReadFile("../../hooks.d/allow-commands.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bypasses := []string{
		`{"argv":["\u0072m","-rf","victim"]}`,
		`{"argv":["rm","-R","--force","victim"]}`,
		`{"argv":["rm","--recursive","-f","victim"]}`,
		`{"argv":["rm","-r","victim","-f"]}`,
		`{"argv":["find","victim","-delete"]}`,
		`{"argv":["python3","-c","import shutil; shutil.rmtree('victim')"]}`,
		`{"argv":["sh","-c","r\"\"m -rf victim"]}`,
		`{"argv":["/bin/rm","-rf","victim"]}`,
		`{"argv":["ls","-la","victim"],"argv":["rm","-rf","victim"]}`,
		`{"argv":["env","rm","-rf","victim"]}`,
		`{"argv":["xargs","rm","-rf"],"stdin":"victim"}`,
		`{"argv":["git","-c","alias.x=!rm -rf victim","x"]}`,
	}
	var calls []llmtest.ToolCall
	for i, args := range bypasses {
		calls = append(calls, llmtest.ToolCall{ID: fmt.Sprintf("b%d", i), Name: "run_command", Args: args})
	}
	calls = append(calls, llmtest.ToolCall{ID: "ok", Name: "run_command", Args: `{"argv":["ls","victim"]}`})
	model := llmtest.New(llmtest.Reply{ToolCalls: calls}, llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", map[string]string{
		"allow-commands.yaml": string(guard),
		"cleanup.yaml":        "prompt: clean up\ntools: [run_command]\n",
	})
	e.environ = []string{withHookdOnPath()}
	if err := os.MkdirAll(e.path("victim"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("victim/keep.txt", "still here\n")
	e.serve()

	run := e.getRun(runID(t, e.must(0, "fire", "cleanup", "--wait")))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("run %s %q", run.Status, run.Error)
	}
	if b, err := os.ReadFile(e.path("victim/keep.txt")); err != nil || string(b) != "still here\n" {
		t.Fatalf("the victim directory was touched: %q %v", b, err)
	}
	tr, err := agent.DecodeTranscript(run)
	if err != nil || tr == nil || len(tr.Rounds) != 2 {
		t.Fatalf("transcript %v: %s", err, run.ToolCalls)
	}
	got := tr.Rounds[0].ToolCalls
	if len(got) != len(bypasses)+1 {
		t.Fatalf("%d tool calls", len(got))
	}
	for i, c := range got[:len(bypasses)] {
		if c.DeniedBy != "allow-commands" || !strings.Contains(c.Error, "command not allowed") {
			t.Errorf("bypass %s: denied by %q, error %q, result %q", bypasses[i], c.DeniedBy, c.Error, c.Result)
		}
	}
	if ok := got[len(bypasses)]; ok.DeniedBy != "" || ok.Error != "" || !strings.Contains(ok.Result, "keep.txt") {
		t.Errorf("the allowed command: %+v", ok)
	}
}

// TestAllowlistGuardPaths runs the shipped guard in the real daemon
// against a model that uses its `ls *` to list what lies outside the
// workdir: an absolute path, the workdir's parents, a path climbing out
// through a subdirectory. Each call is denied with the reason, and the
// listing of a directory inside the workdir is allowed. The same argv run
// without the guard does list the secret file beside the workdir.
func TestAllowlistGuardPaths(t *testing.T) {
	guard, err := os.ReadFile("../../hooks.d/allow-commands.yaml")
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.New(llmtest.Reply{ToolCalls: []llmtest.ToolCall{
		{ID: "abs", Name: "run_command", Args: `{"argv":["ls","/etc"]}`},
		{ID: "up", Name: "run_command", Args: `{"argv":["ls",".."]}`},
		{ID: "upup", Name: "run_command", Args: `{"argv":["ls","../.."]}`},
		{ID: "through", Name: "run_command", Args: `{"argv":["ls","src/../.."]}`},
		{ID: "ok", Name: "run_command", Args: `{"argv":["ls","src"]}`},
	}}, llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", map[string]string{
		"allow-commands.yaml": string(guard),
		"look.yaml":           "prompt: look around\ntools: [run_command]\n",
	})
	e.environ = []string{withHookdOnPath()}
	if err := os.MkdirAll(e.path("src"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("src/main.go", "package main\n")
	// A file beside the workdir: what `ls ..` would show.
	name := filepath.Base(e.dir) + "-outside-secret-name"
	outside := filepath.Join(filepath.Dir(e.dir), name)
	if err := os.WriteFile(outside, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(outside) })
	// Live: the argv the model asks for does list it when run as is.
	cmd := exec.Command("ls", "..")
	cmd.Dir = e.dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), name) {
		t.Fatalf("ls .. in the workdir, unguarded: %v %q", err, out)
	}
	e.serve()

	run := e.getRun(runID(t, e.must(0, "fire", "look", "--wait")))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("run %s %q", run.Status, run.Error)
	}
	tr, err := agent.DecodeTranscript(run)
	if err != nil || tr == nil || len(tr.Rounds) != 2 || len(tr.Rounds[0].ToolCalls) != 5 {
		t.Fatalf("transcript %v: %s", err, run.ToolCalls)
	}
	got := tr.Rounds[0].ToolCalls
	for i, why := range []string{"it is an absolute path", "it has a .. path element", "it has a .. path element", "it has a .. path element"} {
		c := got[i]
		if c.DeniedBy != "allow-commands" || !strings.Contains(c.Error, "command not allowed") || !strings.Contains(c.Error, why) ||
			c.Result != "" || strings.Contains(c.Error, name) || strings.Contains(c.Error, "passwd") {
			t.Errorf("call %s: denied by %q, error %q, result %q", c.ID, c.DeniedBy, c.Error, c.Result)
		}
	}
	if ok := got[4]; ok.DeniedBy != "" || ok.Error != "" || !strings.Contains(ok.Result, "main.go") {
		t.Errorf("the allowed command: %+v", ok)
	}
}

// TestToolInputCanonical: a tool:call:before command handler sees the
// arguments decoded and encoded again, exactly as the tool gets them: a
// JSON escape cannot hide a word from it, and a key given twice cannot
// show it one value and the tool another.
func TestToolInputCanonical(t *testing.T) {
	model := llmtest.New(llmtest.Calls(
		llmtest.ToolCall{ID: "esc", Name: "run_command", Args: `{"argv":["\u0065cho","\u0072m"]}`},
		llmtest.ToolCall{ID: "dup", Name: "run_command", Args: `{"argv":["true"],"argv":["echo","second"]}`},
	), llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", map[string]string{
		"spy.yaml": "on: tool:call:before\ncommand: [sh, -c, 'cat >> seen.jsonl; echo >> seen.jsonl']\n",
		"h.yaml":   "prompt: go\ntools: [run_command]\n",
	})
	e.serve()
	run := e.getRun(runID(t, e.must(0, "fire", "h", "--wait")))
	b, err := os.ReadFile(e.path("seen.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	seen := string(b)
	for _, want := range []string{`"tool_input":{"argv":["echo","rm"]}`, `"tool_input":{"argv":["echo","second"]}`} {
		if !strings.Contains(seen, want) {
			t.Errorf("the handler did not see %s:\n%s", want, seen)
		}
	}
	if strings.Contains(seen, `\u00`) || strings.Contains(seen, `"true"`) {
		t.Errorf("the handler saw the raw arguments:\n%s", seen)
	}
	tr, err := agent.DecodeTranscript(run)
	if err != nil || tr == nil || len(tr.Rounds) == 0 || len(tr.Rounds[0].ToolCalls) != 2 {
		t.Fatalf("transcript %v: %s", err, run.ToolCalls)
	}
	if r := tr.Rounds[0].ToolCalls[1].Result; !strings.Contains(r, "second") {
		t.Errorf("the tool ran other arguments than the handler saw: %q", r)
	}
}

// TestAllowlistGuardJudgesAmendedArguments performs issue 30's attack on
// the shipped guard: it allows `git log *`, and the model asks for
// ["git","log","HEAD --output=out/log"], one argument not beginning with
// "-". A later tool:call:before handler (a real process) amends the call,
// splitting that argument into the option --output=out/log. The guard, a
// fail_closed handler, judges the amended arguments once more and denies
// them, so git writes nothing. Without that second judgement git wrote
// the file the option names (out/ is the hook's write root, so only the
// guard stood between the model and it; a path beside the workdir went
// as far as the sandbox).
func TestAllowlistGuardJudgesAmendedArguments(t *testing.T) {
	model := llmtest.New(llmtest.Reply{ToolCalls: []llmtest.ToolCall{
		{ID: "log", Name: "run_command", Args: `{"argv":["git","log","HEAD --output=out/log"]}`},
	}}, llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", map[string]string{
		"allow-commands.yaml": "on: tool:call:before\nlabel: allow-commands\nmatch: {tool: '^run_command$'}\npriority: 10\ntimeout: 5s\n" +
			"on_error: fail_closed\ncommand: [hookd, guard, '--allow=git log *']\n",
		"splitter.yaml": "on: tool:call:before\nlabel: splitter\npriority: 20\ncommand: [sh, split.sh]\n",
		"look.yaml":     "prompt: look at the history\ntools: [run_command]\nwrite_roots: [out]\n",
	})
	e.environ = []string{withHookdOnPath()}
	e.write("split.sh", "cat >/dev/null\nprintf '%s' '{\"updated_input\":{\"argv\":[\"git\",\"log\",\"HEAD\",\"--output=out/log\"]}}'\n")
	for _, argv := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", argv...)
		cmd.Dir = e.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", argv, err, out)
		}
	}
	if err := os.Mkdir(e.path("out"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.serve()

	run := e.getRun(runID(t, e.must(0, "fire", "look", "--wait")))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("run %s %q", run.Status, run.Error)
	}
	if e.exists("out/log") {
		t.Errorf("git wrote out/log: the option the guard never allows ran")
	}
	tr, err := agent.DecodeTranscript(run)
	if err != nil || tr == nil || len(tr.Rounds) != 2 || len(tr.Rounds[0].ToolCalls) != 1 {
		t.Fatalf("transcript %v: %s", err, run.ToolCalls)
	}
	c := tr.Rounds[0].ToolCalls[0]
	if c.DeniedBy != "allow-commands" || !strings.Contains(c.Error, "command not allowed: git log HEAD '--output=out/log';") ||
		!strings.Contains(c.Error, "(the arguments as amended by splitter)") || c.Result != "" {
		t.Errorf("the split call: denied by %q, error %q, result %q", c.DeniedBy, c.Error, c.Result)
	}
}
