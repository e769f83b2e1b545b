package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
)

// progressHooks has a hook whose second step fails the run.
var progressHooks = map[string]string{
	"two.yaml": `steps:
  - name: first
    type: shell
    command: echo one
  - name: second
    type: shell
    command: echo two; exit 3
skip_llm: true
`,
}

// TestStreamProgress: a daemon's live stream carries each step's start
// and end, with its outcome, between the run's start and end; hookd watch
// prints them one line each.
func TestStreamProgress(t *testing.T) {
	e := newEnv(t, "", progressHooks)
	e.serve()
	c := e.socketClient()

	s := c.openStream("", "?hook=two")
	<-s.first
	var fired api.RunAnswer
	c.json("POST", "/v1/hooks/two/fire", nil, 200, &fired)
	got := s.until(func(ev api.Event) bool { return ev.Type == "hook.run.failed" && ev.Data["run_id"] == fired.Run.ID })
	var types []string
	for _, ev := range got {
		types = append(types, fmt.Sprintf("%s %v", ev.ev.Type, ev.ev.Data["index"]))
	}
	want := "[hook.run.started <nil> hook.step.started 0 hook.step.finished 0 hook.step.started 1 hook.step.finished 1 hook.run.failed <nil>]"
	if fmt.Sprint(types) != want {
		t.Fatalf("stream:\n got %v\nwant %s", types, want)
	}
	fin := got[4].ev.Data
	if fin["name"] != "second" || fin["kind"] != "shell" || fin["outcome"] != "exit" || fin["exit_code"] != 3.0 || fin["fails_run"] != true {
		t.Errorf("second step finished: %v", fin)
	}
	if _, ok := fin["duration_ms"].(float64); !ok {
		t.Errorf("no duration_ms: %v", fin)
	}

	r := e.must(0, "watch", "--since", "0", "--type", "hook.step.*", "-n", "4")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 {
		t.Fatalf("watch printed:\n%s", r)
	}
	for i, re := range []string{
		`step +two run ` + fired.Run.ID + ` step_0 \(first\) shell: started$`,
		`step +two run ` + fired.Run.ID + ` step_0 \(first\) shell: ok in \d+(\.\d)?m?s$`,
		`step +two run ` + fired.Run.ID + ` step_1 \(second\) shell: started$`,
		`step +two run ` + fired.Run.ID + ` step_1 \(second\) shell: exit 3 in \d+(\.\d)?m?s \(fails the run\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("watch line %d: %q, want %s", i, lines[i], re)
		}
	}
}

// gateHooks has a hook whose second step waits for a file.
var gateHooks = map[string]string{
	"gate.yaml": `steps:
  - name: first
    type: shell
    command: echo one
  - name: wait
    type: shell
    command: |
      i=0
      while [ ! -f release ] && [ "$i" -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
      echo released
  - name: last
    type: shell
    command: exit 2
skip_llm: true
`,
}

// TestFireWaitProgress: fire --wait prints each step as it finishes,
// while the run goes on; meanwhile hookd run, status and runs show the
// run in flight with its finished steps, its current one and elapsed
// times.
func TestFireWaitProgress(t *testing.T) {
	e := newEnv(t, "", gateHooks)
	e.serve()

	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cmd := e.command(ctx, "fire", "gate", "--wait")
	var out, errOut logBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The progress (stderr) can come before the fire's answer names the run
	// (stdout): wait for both.
	waitFor(t, "fire --wait to print the run and its first step", func() bool {
		return strings.Contains(errOut.String(), "step_0 (first) shell: ok in") && strings.Contains(out.String(), "\n")
	}, func() string { return out.String() + errOut.String() })
	id := strings.TrimSpace(out.String())
	if strings.Contains(errOut.String(), "gate failed") {
		t.Fatalf("the outcome came before the run ended:\n%s", errOut.String())
	}

	// The run is in flight at step 1.
	waitFor(t, "hookd run to show step 1 running", func() bool {
		return strings.Contains(e.must(0, "run", id).stdout, "now: step_1 (wait) shell for")
	}, func() string { return e.must(0, "run", id).stdout })
	r := e.must(0, "run", id)
	if !regexp.MustCompile(`running for \d+s:\n  step_0 \(first\) shell: ok in \d`).MatchString(r.stdout) {
		t.Errorf("hookd run of a running run:\n%s", r)
	}
	r = e.must(0, "status")
	if !regexp.MustCompile(`in flight: 1\n  gate +` + id + ` +\d+s +step_1 \(wait\) shell for \d+s`).MatchString(r.stdout) {
		t.Errorf("hookd status:\n%s", r)
	}
	var rep api.StatusReport
	if err := json.Unmarshal([]byte(e.must(0, "status", "--json").stdout), &rep); err != nil || len(rep.Running) != 1 ||
		rep.Running[0].Hook != "gate" || rep.Running[0].Current == nil || rep.Running[0].Current.Name != "wait" || len(rep.Running[0].Steps) != 1 {
		t.Errorf("status --json running: %+v %v", rep.Running, err)
	}
	if r = e.must(0, "runs", "gate"); !regexp.MustCompile(id + ` +gate +running +manual +\S+ \S+ \S+ +\d+s so far`).MatchString(r.stdout) {
		t.Errorf("hookd runs:\n%s", r)
	}

	e.write("release", "")
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("fire --wait: %v\n%s%s", err, out.String(), errOut.String())
	}
	// The steps' own output (live, "LABEL | text") comes on a stream of
	// its own, among the progress lines: apart.
	var lines, output []string
	for _, l := range strings.Split(strings.TrimRight(errOut.String(), "\n"), "\n") {
		if strings.Contains(l, " | ") {
			output = append(output, l)
		} else {
			lines = append(lines, l)
		}
	}
	if strings.Join(output, "\n") != "  step_0 (first) | one\n  step_1 (wait) | released" {
		t.Errorf("fire --wait printed the steps' output as %q", output)
	}
	want := []string{
		`^  step_0 \(first\) shell: ok in \S+$`,
		`^  step_1 \(wait\) shell: ok in \S+$`,
		`^  step_2 \(last\) shell: exit 2 in \S+ \(fails the run\)$`,
		`^gate failed .* in \S+: step_2 \(last\): exit code 2$`,
	}
	if len(lines) != len(want) {
		t.Fatalf("fire --wait printed on stderr:\n%s", errOut.String())
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("line %d: %q, want %s", i, lines[i], re)
		}
	}
	if r := e.must(0, "run", id); strings.Contains(r.stdout, "running for") {
		t.Errorf("a finished run shows progress:\n%s", r)
	}
}

// TestFireInProcessProgress: with no daemon, fire runs the hook here and
// prints its steps from the engine's bus the same way.
func TestFireInProcessProgress(t *testing.T) {
	e := newEnv(t, "", progressHooks)
	r := e.must(1, "fire", "two", "--wait")
	// The steps' own output ("LABEL | text") comes apart, among them.
	var progress, output []string
	for _, l := range strings.SplitAfter(r.stderr, "\n") {
		if strings.Contains(l, " | ") {
			output = append(output, l)
		} else {
			progress = append(progress, l)
		}
	}
	if got := strings.Join(output, ""); got != "  step_0 (first) | one\n  step_1 (second) | two\n" {
		t.Errorf("in-process fire --wait printed the steps' output as %q", got)
	}
	for _, re := range []string{
		`(?m)^  step_0 \(first\) shell: ok in \S+\n  step_1 \(second\) shell: exit 3 in \S+ \(fails the run\)\ntwo failed`,
	} {
		if !regexp.MustCompile(re).MatchString(strings.Join(progress, "")) {
			t.Errorf("in-process fire --wait:\n%s", r)
		}
	}
}

// TestProgressBeforeFireAnswer: fire --wait follows the stream before it
// fires, so a fast step's events can arrive before the fire's answer names
// the run; they are printed once the run is known, not dropped.
func TestProgressBeforeFireAnswer(t *testing.T) {
	var out bytes.Buffer
	p := newProgressPrinter(&out, func() {}, false)
	now := time.Now()
	step := map[string]any{"hook": "h", "run_id": "R1", "index": 0, "name": "first", "kind": "shell",
		"started_at": now.Format(time.RFC3339Nano), "duration_ms": 3, "outcome": "ok"}
	other := map[string]any{"hook": "h", "run_id": "R0", "index": 0, "name": "other", "kind": "shell",
		"started_at": now.Format(time.RFC3339Nano), "duration_ms": 3, "outcome": "ok"}
	p.event(engine.EventStepFinished, now, other)
	p.event(engine.EventStepFinished, now, step)
	if out.Len() != 0 {
		t.Fatalf("printed before the run was known: %q", out.String())
	}
	p.setRun("R1")
	if !strings.Contains(out.String(), "step_0 (first) shell: ok in") || strings.Contains(out.String(), "other") {
		t.Errorf("after setRun: %q", out.String())
	}
}

// TestHTTPStatusProgress: an http step a loopback server answers 503
// (which fails a hook with no model stage) reads "http 503 (fails the
// run)" in fire --wait's progress, not "ok".
func TestHTTPStatusProgress(t *testing.T) {
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "try later", http.StatusServiceUnavailable)
	}))
	defer busy.Close()
	e := newEnv(t, "", map[string]string{"post.yaml": "steps:\n  - name: post\n    type: http\n    method: POST\n    url: " +
		busy.URL + "/hook\n    allow_private: true\nskip_llm: true\n"})
	r := e.must(1, "fire", "post", "--wait")
	re := `(?m)^  step_0 \(post\) http: http 503 in \S+ \(fails the run\)\npost failed .*: step_0 \(post\): status 503$`
	if !regexp.MustCompile(re).MatchString(r.stderr) {
		t.Errorf("fire --wait of an http step answered 503:\n%s", r)
	}
}
