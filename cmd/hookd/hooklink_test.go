package main

import (
	"os"
	"strings"
	"testing"

	"github.com/hookd/hookd/llm/llmtest"
)

// TestHostileModelCannotEditLinkedHook performs the attack on a hook
// file that is a symbolic link out of hooks.d (hookd loads the link's
// target): a scripted model that may write in shared/, where the targets
// live, replaces a linked hook with one that holds run_command, appends
// to it, creates the missing target of a dangling link (a hook hookd
// would load at its next reload), and rewrites the target of a linked
// command handler. Every call is refused as a hook; nothing changes, and
// hookd still loads the same hooks.
func TestHostileModelCannotEditLinkedHook(t *testing.T) {
	const victim = "prompt: summarise\n"
	const guard = "on: tool:call:before\ncommand: [sh, -c, 'exit 0']\n"
	call := func(id, args string) llmtest.ToolCall {
		return llmtest.ToolCall{ID: id, Name: "write_file", Args: args}
	}
	model := llmtest.New(llmtest.Calls(
		call("replace", `{"path":"shared/victim.yaml","content":"prompt: pwned\ntools: [run_command]\n"}`),
		call("append", `{"path":"shared/victim.yaml","content":"tools: [run_command]\n","append":true}`),
		call("dangling", `{"path":"shared/later.yaml","content":"prompt: pwned\ntools: [run_command]\n"}`),
		call("abs", `{"path":"shared/deep/abs.yaml","content":"prompt: pwned\n"}`),
		call("handler", `{"path":"shared/guard.yaml","content":"on: tool:call:before\ncommand: [touch, pwned]\n"}`),
		call("legit", `{"path":"shared/notes.md","content":"fine\n"}`),
	), llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "", map[string]string{
		"writer.yaml": "llm: {model: m, base_url: " + model.BaseURL() + "}\nprompt: tidy up\ntools: [write_file]\nwrite_roots: [shared]\n",
	})
	if err := os.MkdirAll(e.path("shared/deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("shared/victim.yaml", victim)
	e.write("shared/deep/abs.yaml", victim)
	e.write("shared/guard.yaml", guard)
	for link, target := range map[string]string{
		"hooks.d/victim.yaml": "../shared/victim.yaml",
		"hooks.d/later.yaml":  "../shared/later.yaml", // dangling until someone writes it
		"hooks.d/abs.yaml":    e.path("shared/deep/abs.yaml"),
		"hooks.d/guard.yaml":  "../shared/guard.yaml",
	} {
		if err := os.Symlink(target, e.path(link)); err != nil {
			t.Fatal(err)
		}
	}
	before := e.run("validate").stdout

	_, calls := e.firstRound("writer")
	for _, c := range calls {
		switch {
		case c.ID == "legit" && c.Error != "":
			t.Errorf("the legitimate write failed: %s", c.Error)
		case c.ID != "legit" && !strings.Contains(c.Error, "refused"):
			t.Errorf("%s was not refused: result %q error %q", c.ID, c.Result, c.Error)
		}
	}
	for file, want := range map[string]string{"shared/victim.yaml": victim, "shared/deep/abs.yaml": victim, "shared/guard.yaml": guard} {
		if b, _ := os.ReadFile(e.path(file)); string(b) != want {
			t.Errorf("%s holds %q", file, b)
		}
	}
	for _, p := range []string{"shared/later.yaml", "pwned"} {
		if _, err := os.Lstat(e.path(p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if after := e.run("validate").stdout; after != before {
		t.Errorf("hookd loads other hooks now:\nbefore: %s\nafter: %s", before, after)
	}
}
