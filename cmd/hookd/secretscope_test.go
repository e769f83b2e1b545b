package main

import (
	"os"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestSecretReachesOnlyWhatNamesIt performs the leak of issue 27
// ("Secrets are scoped") against the real binary: a hook holds two
// secrets, one named by its deploy step and one by its run_command tool;
// its other steps and tools, which name neither, dump their raw process
// environment (/proc/self/environ, and env) to files in the workdir,
// outside redaction. A step or tool gets exactly the secrets it names:
// the lint step and the run_tests step get none, run_command gets only
// its own, and the deploy step only its own.
func TestSecretReachesOnlyWhatNamesIt(t *testing.T) {
	const (
		stepSecret = "step-secret-3f9a1c5e"
		toolSecret = "tool-secret-77b2e0d4"
	)
	model := llmtest.New(llmtest.Calls(
		llmtest.ToolCall{ID: "c1", Name: "run_command", Args: `{"argv":["sh","-c","cat /proc/self/environ > tool.environ; env > tool.env"]}`},
	), llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "", map[string]string{"scoped.yaml": `secrets: [DEPLOY_TOKEN, TOOL_TOKEN]
steps:
  - name: deploy
    type: shell
    command: cat /proc/self/environ > deploy.environ
    secrets: [DEPLOY_TOKEN]
  - name: lint
    type: shell
    command: cat /proc/self/environ > lint.environ; env > lint.env
  - name: tests
    type: run_tests
    command: cat /proc/self/environ > tests.environ
prompt: go
llm: {model: m, base_url: ` + model.BaseURL() + `}
tools:
  - run_command: {secrets: [TOOL_TOKEN]}
write_roots: [.]
`})
	e.environ = append(e.environ, "DEPLOY_TOKEN="+stepSecret, "TOOL_TOKEN="+toolSecret)
	run := e.getRun(runID(t, e.must(0, "fire", "scoped", "--wait")))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("%s %q", run.Status, run.Error)
	}
	for _, tc := range []struct {
		file     string
		has, not []string
	}{
		{"deploy.environ", []string{"DEPLOY_TOKEN=" + stepSecret}, []string{toolSecret}},
		{"lint.environ", nil, []string{stepSecret, toolSecret, "DEPLOY_TOKEN", "TOOL_TOKEN"}},
		{"lint.env", nil, []string{stepSecret, toolSecret, "DEPLOY_TOKEN", "TOOL_TOKEN"}},
		{"tests.environ", nil, []string{stepSecret, toolSecret, "DEPLOY_TOKEN", "TOOL_TOKEN"}},
		{"tool.environ", []string{"TOOL_TOKEN=" + toolSecret}, []string{stepSecret, "DEPLOY_TOKEN"}},
		{"tool.env", []string{"TOOL_TOKEN=" + toolSecret}, []string{stepSecret, "DEPLOY_TOKEN"}},
	} {
		b, err := os.ReadFile(e.path(tc.file))
		if err != nil {
			t.Errorf("the process did not write its environment: %v", err)
			continue
		}
		got := string(b)
		if !strings.Contains(got, "PATH=") {
			t.Errorf("%s holds no environment: %q", tc.file, got)
		}
		for _, s := range tc.has {
			if !strings.Contains(got, s) {
				t.Errorf("%s lacks %q: the secret did not reach the process that names it", tc.file, s)
			}
		}
		for _, s := range tc.not {
			if strings.Contains(got, s) {
				t.Errorf("%s holds %q: a secret reached a process that does not name it", tc.file, s)
			}
		}
	}
	// Redaction still covers both secrets everywhere, whoever got them.
	record := e.must(0, "run", run.ID, "--json").stdout
	for _, s := range []string{stepSecret, toolSecret} {
		if strings.Contains(record, s) {
			t.Errorf("the run record holds a secret")
		}
	}
}

// TestValidateUnnamedSecret: a hook-level secret that no step or tool
// names would reach no process: `hookd validate` fails naming the file,
// the line and the field, with the fix; once a step names it, it passes.
func TestValidateUnnamedSecret(t *testing.T) {
	e := newEnv(t, "", map[string]string{"gh.yaml": `description: list issues
secrets:
  - GITHUB_TOKEN
steps:
  - name: issues
    type: shell
    command: gh issue list
skip_llm: true
`})
	r := e.must(1, "validate")
	want := "hooks.d/gh.yaml:3: secrets[0]: GITHUB_TOKEN is named by no step or tool; add `secrets: [GITHUB_TOKEN]` to the step that needs it"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("validate does not say %q:\n%s", want, r)
	}
	e.write("hooks.d/gh.yaml", `description: list issues
secrets:
  - GITHUB_TOKEN
steps:
  - name: issues
    type: shell
    command: gh issue list
    secrets: [GITHUB_TOKEN]
skip_llm: true
`)
	e.must(0, "validate")
}
