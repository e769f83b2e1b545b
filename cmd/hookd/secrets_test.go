package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/api"
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
		base64.StdEncoding.EncodeToString([]byte("u:" + hookSecret)),
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
	// An API that echoes the credential in a URL, percent-encoded.
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "next: https://api.example/v1?token=%s\npath: https://api.example/keys/%s/info\n",
			url.QueryEscape(hookSecret), url.PathEscape(hookSecret))
	}))
	defer upstream.Close()
	e := newEnv(t, `
llm:
  model: test-model
  base_url: `+model.BaseURL()+`
`, map[string]string{
		"leak.yaml": `secrets: [MY_SECRET]
env_passthrough: [PASSED_VAR, HOOKD_TOKEN]
steps:
  - name: read
    type: shell
    command: printf 'token=%s\n' "$MY_SECRET"
    secrets: [MY_SECRET]
  - name: out
    type: emit
    event_type: leak.out
    data:
      tok: "{{steps.read.output}}"
      nested: {list: ["{{steps.read.stdout}}"]}
  - name: env
    type: shell
    command: env
    secrets: [MY_SECRET]
  - name: encoded
    type: shell
    command: printf '%s' "$MY_SECRET" | base64 -w0; echo; printf 'u:%s' "$MY_SECRET" | base64 -w0
    secrets: [MY_SECRET]
  - name: api
    type: http
    url: ` + upstream.URL + `/account
    allow_private: true
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
    secrets: [MY_SECRET]
prompt: "The token is {{steps.read.output}}; the event is {{event}}."
tools:
  - run_command: {secrets: [MY_SECRET]}
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
	live := stream.until(func(ev api.Event) bool { return ev.Type == "hook.run.completed" && ev.Data["hook"] == "next" })
	askRun := e.getRun(runID(t, e.must(0, "fire", "ask", "--wait", "--event", `{"note":"hello"}`)))
	if askRun.Status != engine.StatusCompleted {
		t.Fatalf("ask: %s %q\n%s", askRun.Status, askRun.Error, d.log)
	}

	// The secret reached the steps that need it, and was redacted.
	if got := leakRun.Steps[0].Output; got != "token=[REDACTED:MY_SECRET]\n" {
		t.Errorf("read step output %q", got)
	}
	envOut := leakRun.Steps[2].Output
	for _, want := range []string{"MY_SECRET=[REDACTED:MY_SECRET]\n", "PASSED_VAR=passed-value\n", "PATH=",
		// hookd's own credentials are redacted even where a hook passes one through.
		"HOOKD_TOKEN=[REDACTED:HOOKD_TOKEN]\n"} {
		if !strings.Contains(envOut, want) {
			t.Errorf("env step lacks %q:\n%s", want, envOut)
		}
	}
	if got := leakRun.Steps[3].Output; strings.Count(got, "[REDACTED:MY_SECRET]") != 2 {
		t.Errorf("base64 step output %q", got)
	}
	if got := leakRun.Steps[4].Output; strings.Count(got, "[REDACTED:MY_SECRET]") != 2 {
		t.Errorf("http step output %q", got)
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
	// The search index holds the redacted record: the secret's words find
	// nothing, by the CLI or the API; the redaction marker finds the runs.
	for _, q := range []string{"Zx81", "ключ", "uo te ключ Zx81"} {
		out := e.must(0, "search", q, "--json").stdout
		check("`hookd search "+q+"`", out)
		if strings.Contains(out, "run_id") {
			t.Errorf("hookd search %q found runs by the secret:\n%s", q, out)
		}
		_, body := c.call("GET", "/v1/search?q="+url.QueryEscape(q), nil)
		if strings.TrimSpace(string(body)) != "[]" {
			t.Errorf("GET /v1/search?q=%s: %s", q, body)
		}
	}
	if out := e.must(0, "search", "REDACTED MY_SECRET", "--json").stdout; !strings.Contains(out, leakRun.ID) {
		t.Errorf("the redacted record is not indexed:\n%s", out)
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
	for _, ev := range replay.until(func(ev api.Event) bool { return ev.Type == "hook.run.completed" && ev.Data["hook"] == "ask" }) {
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

// TestStepCannotReadHookdEnviron: a step cannot read hookd's own
// environment through /proc/$PPID/environ, as hookd is not dumpable
// (where no cgroup can be had, the step's parent is its reaper, whose
// parent is hookd). As
// root reads every process's environment, a root test runs hookd as
// nobody.
func TestStepCannotReadHookdEnviron(t *testing.T) {
	e := newEnv(t, "", map[string]string{"procenv.yaml": `steps:
  - type: shell
    command: p=$PPID; if grep -q __hookd-reaper /proc/$p/cmdline; then p=$(awk '/^PPid:/ {print $2}' /proc/$p/status); fi; tr '\0' '\n' < /proc/$p/environ
skip_llm: true
`})
	e.environ = []string{"OPENAI_API_KEY=" + daemonCreds["OPENAI_API_KEY"]}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cmd := e.command(ctx, "fire", "procenv", "--wait")
	if os.Geteuid() == 0 {
		const nobody = 65534
		if err := os.Chmod(filepath.Dir(hookdBin), 0o755); err != nil {
			t.Fatal(err)
		}
		err := filepath.WalkDir(e.dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, nobody, nobody)
		})
		if err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output() // exit 1 is expected: the step fails
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("hookd fire: %v\n%s%s", err, out, stderr.String())
	}
	run := e.getRun(runID(t, result{stdout: string(out), stderr: stderr.String()}))
	st := run.Steps[0]
	if strings.Contains(st.Output, "sk-daemon") || strings.Contains(st.Output, "PATH=") || st.ExitCode == nil || *st.ExitCode == 0 {
		t.Errorf("a step read hookd's environment: exit %v\n%s", st.ExitCode, st.Output)
	}
	if !strings.Contains(st.Fields["stderr"].(string), "Permission denied") {
		t.Errorf("stderr %q, want Permission denied (output %q, error %q)", st.Fields["stderr"], st.Output, st.Error)
	}
}
