package main

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
)

// The hook's secret: quotes, a backslash and non-ASCII text change it
// when it is quoted or escaped.
const hookSecret = `q"uo\te-ключ-🔑-Zx81`

// hookd's own credentials, which no step or tool process may see.
var daemonCreds = map[string]string{
	"OPENAI_API_KEY":    "sk-daemon-key-5ad9c3e1",
	"HOOKD_TOKEN":       "daemon-api-token-77f1e0",
	"SLACK_WEBHOOK_URL": "https://hooks.slack.example/T000/daemon-url-4b2c",
}

// secretForms are the texts that would give the hook's secret away.
func secretForms() []string {
	q := strconv.Quote(hookSecret)
	j, _ := json.Marshal(hookSecret)
	return []string{
		hookSecret, q[1 : len(q)-1], string(j[1 : len(j)-1]),
		url.QueryEscape(hookSecret), url.PathEscape(hookSecret),
		base64.StdEncoding.EncodeToString([]byte(hookSecret)),
	}
}

// leaked names the first secret (the hook's, in any form, or hookd's
// own credentials) found in s.
func leaked(s string) string {
	for _, f := range secretForms() {
		if strings.Contains(s, f) {
			return "the hook's secret as " + strconv.Quote(f)
		}
	}
	for k, v := range daemonCreds {
		if strings.Contains(s, v) {
			return k
		}
	}
	return ""
}

// TestSecretsDoNotLeak performs the leaks of issue 10 §4 against the
// real daemon: a step reads the hook's secret and an emit step publishes
// it to another hook; the prompt quotes it; a shell step and the model's
// run_command print the environment. Neither the secret (raw, escaped or
// encoded) nor hookd's own credentials may reach the database, the event
// log, the stream, the next hook's run, the model or the daemon's log.
func TestSecretsDoNotLeak(t *testing.T) {
	model := llmtest.New(
		llmtest.Calls(
			llmtest.ToolCall{ID: "c1", Name: "run_command", Args: `{"argv":["printenv","OPENAI_API_KEY","HOOKD_TOKEN","SLACK_WEBHOOK_URL"]}`},
			llmtest.ToolCall{ID: "c2", Name: "run_command", Args: `{"argv":["env"]}`},
		),
		llmtest.Answer("done"),
	)
	defer model.Close()
	e := newEnv(t, `
llm:
  model: test-model
  base_url: `+model.BaseURL()+`
`, map[string]string{
		"leak.yaml": `secrets: [MY_SECRET]
env_passthrough: [PASSED_VAR]
steps:
  - name: read
    type: shell
    command: printf 'token=%s\n' "$MY_SECRET"
  - name: out
    type: emit
    event_type: leak.out
    data:
      tok: "{{steps.read.output}}"
      nested: {list: ["{{steps.read.stdout}}"]}
  - name: env
    type: shell
    command: env
skip_llm: true
`,
		"next.yaml": `trigger:
  event: leak.out
steps:
  - name: echo
    type: shell
    command: printf '%s' {{event.tok}}
skip_llm: true
`,
		"ask.yaml": `secrets: [MY_SECRET]
steps:
  - name: read
    type: shell
    command: printf '%s' "$MY_SECRET"
prompt: "The token is {{steps.read.output}}; the event is {{event}}."
tools: [run_command]
`,
	})
	e.environ = []string{"MY_SECRET=" + hookSecret, "PASSED_VAR=passed-value"}
	for k, v := range daemonCreds {
		e.environ = append(e.environ, k+"="+v)
	}
	d := e.serve()
	c := e.socketClient()
	stream := c.openStream("", "")
	<-stream.first

	leakRun := e.getRun(runID(t, e.must(0, "fire", "leak", "--wait")))
	live := stream.until(func(ev eventJSON) bool { return ev.Type == "hook.run.completed" && ev.Data["hook"] == "next" })
	askRun := e.getRun(runID(t, e.must(0, "fire", "ask", "--wait", "--event", `{"note":"hello"}`)))
	if askRun.Status != engine.StatusCompleted {
		t.Fatalf("ask: %s %q\n%s", askRun.Status, askRun.Error, d.log)
	}

	// The secret reached the steps that need it, and was redacted.
	if got := leakRun.Steps[0].Output; got != "token=[REDACTED:MY_SECRET]\n" {
		t.Errorf("read step output %q", got)
	}
	envOut := leakRun.Steps[2].Output
	for _, want := range []string{"MY_SECRET=[REDACTED:MY_SECRET]\n", "PASSED_VAR=passed-value\n", "PATH="} {
		if !strings.Contains(envOut, want) {
			t.Errorf("env step lacks %q:\n%s", want, envOut)
		}
	}
	if !strings.Contains(askRun.Prompt, "[REDACTED:MY_SECRET]") {
		t.Errorf("prompt %q", askRun.Prompt)
	}

	// Nowhere a secret.
	check := func(where, s string) {
		t.Helper()
		if l := leaked(s); l != "" {
			t.Errorf("%s holds %s:\n%s", where, l, s)
		}
	}
	for _, id := range []string{leakRun.ID, askRun.ID} {
		check("`hookd run "+id+" --json`", e.must(0, "run", id, "--json").stdout)
	}
	var nexts []*engine.Run
	waitFor(t, "the next hook's run", func() bool {
		nexts = e.listRuns("next")
		return len(nexts) == 1 && nexts[0].Status == engine.StatusCompleted
	}, nil)
	next := e.must(0, "run", nexts[0].ID, "--json").stdout
	check("the next hook's run", next)
	if !strings.Contains(next, "[REDACTED:MY_SECRET]") {
		t.Errorf("the next hook's run lacks the redacted value:\n%s", next)
	}
	_, events := c.call("GET", "/v1/events?after=0&limit=1000", nil)
	check("GET /v1/events", string(events))
	if !strings.Contains(string(events), `token=[REDACTED:MY_SECRET]`) {
		t.Errorf("the emitted event lacks the redacted value:\n%s", events)
	}
	for _, ev := range live {
		b, _ := json.Marshal(ev.ev)
		check("the live stream", string(b))
	}
	replay := c.openStream("0", "")
	for _, ev := range replay.until(func(ev eventJSON) bool { return ev.Type == "hook.run.completed" && ev.Data["hook"] == "ask" }) {
		b, _ := json.Marshal(ev.ev)
		check("the replayed stream", string(b))
	}
	for _, r := range model.Requests() {
		check("a request to the model", string(r.Raw))
	}
	if reqs := model.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), "MY_SECRET=[REDACTED:MY_SECRET]") {
		t.Errorf("the model did not get the tool results: %d requests", len(reqs))
	}
	d.signal(15)
	d.wait()
	check("the daemon's log", d.log.String())
	files, _ := filepath.Glob(e.path(".hookd/*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			if l := leaked(string(b)); l != "" {
				t.Errorf("%s holds %s", filepath.Base(f), l)
			}
		}
	}
}
