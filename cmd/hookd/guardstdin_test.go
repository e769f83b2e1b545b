package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestAllowlistGuardStdin performs the attack through a command the
// allowlist guard allows word for word but that runs what it reads on
// standard input: run_command's stdin carries the code (sqlite3's .shell
// runs a program; sh -s reads its script there). The guard denies a
// call that feeds such a program standard input, so nothing runs; the
// same command without stdin, and stdin to a program that reads it as
// data, are allowed.
func TestAllowlistGuardStdin(t *testing.T) {
	calls := []llmtest.ToolCall{
		{ID: "sh", Name: "run_command", Args: `{"argv":["sh","-s"],"stdin":"touch pwned-sh\n"}`},
		{ID: "ok-sh", Name: "run_command", Args: `{"argv":["sh","-s"]}`},
		{ID: "ok-data", Name: "run_command", Args: `{"argv":["wc","-l"],"stdin":"one\ntwo\n"}`},
	}
	sqlite := false
	if _, err := exec.LookPath("sqlite3"); err == nil {
		sqlite = true
		calls = append(calls, llmtest.ToolCall{ID: "sqlite3", Name: "run_command",
			Args: `{"argv":["sqlite3","-readonly","data.db"],"stdin":".shell touch pwned-sqlite\n"}`})
	}
	model := llmtest.New(llmtest.Reply{ToolCalls: calls}, llmtest.Answer("done"))
	defer model.Close()
	guard := "on: tool:call:before\nlabel: allow-commands\nmatch: {tool: \"^run_command$\"}\non_error: fail_closed\n" +
		"command: [hookd, guard, \"--allow=sqlite3 -readonly data.db\", \"--allow=sh -s\", \"--allow=wc -l\"]\n"
	e := newEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", map[string]string{
		"allow-commands.yaml": guard,
		"query.yaml":          "prompt: query the data\ntools: [run_command]\n",
	})
	e.environ = []string{withHookdOnPath()}
	run := e.getRun(runID(t, e.must(0, "fire", "query", "--wait")))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("%s %q", run.Status, run.Error)
	}
	tr, err := agent.DecodeTranscript(run)
	if err != nil || tr == nil || len(tr.Rounds) == 0 {
		t.Fatalf("transcript %v: %s", err, run.ToolCalls)
	}
	for _, c := range tr.Rounds[0].ToolCalls {
		ok := strings.HasPrefix(c.ID, "ok-")
		switch {
		case ok && (c.Outcome != engine.ToolOK || !strings.Contains(c.Result, "exit code: 0")):
			t.Errorf("%s was not run: %s %q %q", c.ID, c.Outcome, c.Result, c.Error)
		case !ok && (c.Outcome != engine.ToolDenied || !strings.Contains(c.Error, "standard input")):
			t.Errorf("%s was not denied for its stdin: %s %q %q", c.ID, c.Outcome, c.Result, c.Error)
		}
	}
	for _, p := range []string{"pwned-sh", "pwned-sqlite"} {
		if _, err := os.Lstat(e.path(p)); err == nil {
			t.Errorf("%s was made: the code on stdin ran (sqlite3 on PATH: %v)", p, sqlite)
		}
	}
}
