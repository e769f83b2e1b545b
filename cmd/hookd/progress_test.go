package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
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
	var fired runAnswer
	c.json("POST", "/v1/hooks/two/fire", nil, 200, &fired)
	got := s.until(func(ev eventJSON) bool { return ev.Type == "hook.run.failed" && ev.Data["run_id"] == fired.Run.ID })
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
