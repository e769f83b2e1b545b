package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestGitBareRepoFromModel performs, through the real daemon, the attack
// of a model that writes a bare git repository as plain files in its
// write root (HEAD, an empty objects/info/alternates, a file under refs/
// and a config whose core.fsmonitor runs its command, with core.worktree
// making the directory its own work tree), then asks run_command for
// `git status` there, which the shipped guard allows. The files are a
// live attack: plain git started there runs the command and writes the
// canary outside the workdir. Through hookd, git refuses the repository
// (safe.bareRepository=explicit) and nothing runs.
func TestGitBareRepoFromModel(t *testing.T) {
	testtool.Need(t, "git")
	guard, err := os.ReadFile("../../hooks.d/allow-commands.yaml")
	if err != nil {
		t.Fatal(err)
	}
	canary := filepath.Join(t.TempDir(), "canary")
	write := func(id, path, content string) llmtest.ToolCall {
		args, err := json.Marshal(map[string]any{"path": path, "content": content, "create_dirs": true})
		if err != nil {
			t.Fatal(err)
		}
		return llmtest.ToolCall{ID: id, Name: "write_file", Args: string(args)}
	}
	model := llmtest.New(
		llmtest.Calls(
			write("head", "out/HEAD", "ref: refs/heads/main\n"),
			write("alternates", "out/objects/info/alternates", ""),
			write("ref", "out/refs/heads/x", ""),
			write("config", "out/config", "[core]\n\trepositoryformatversion = 0\n\tworktree = .\n"+
				"\tfsmonitor = \"echo ran >> "+canary+"; false\"\n"),
		),
		llmtest.Calls(llmtest.ToolCall{ID: "status", Name: "run_command", Args: `{"argv":["git","status"],"dir":"out"}`}),
		llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", map[string]string{
		"allow-commands.yaml": string(guard),
		"tidy.yaml":           "prompt: tidy up\ntools: [write_file, run_command]\nwrite_roots: [out]\n",
	})
	e.environ = []string{withHookdOnPath()}
	e.serve()

	run := e.getRun(runID(t, e.must(0, "fire", "tidy", "--wait")))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("run %s %q", run.Status, run.Error)
	}
	tr, err := agent.DecodeTranscript(run)
	if err != nil || tr == nil || len(tr.Rounds) != 3 {
		t.Fatalf("transcript %v: %s", err, run.ToolCalls)
	}
	for _, c := range tr.Rounds[0].ToolCalls {
		if c.Error != "" {
			t.Fatalf("write_file %s: %s", c.ID, c.Error)
		}
	}
	status := tr.Rounds[1].ToolCalls[0]
	if status.DeniedBy != "" || !strings.Contains(status.Result, "safe.bareRepository") {
		t.Errorf("git status: denied by %q, error %q, result %q; want git to refuse the bare repository", status.DeniedBy, status.Error, status.Result)
	}
	if b, err := os.ReadFile(canary); err == nil {
		t.Fatalf("git status through run_command ran the repository's fsmonitor: %q", b)
	}

	// Live: the same files, plain git with a clean environment.
	cmd := exec.Command("git", "status")
	cmd.Dir = e.path("out")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	out, _ := cmd.CombinedOutput()
	if _, err := os.Stat(canary); err != nil {
		t.Fatalf("live: plain git status in the model's directory did not run its fsmonitor (%v): %s", err, out)
	}
}
