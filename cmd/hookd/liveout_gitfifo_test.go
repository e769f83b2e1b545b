package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/api"
)

// liveReader reads one run's live output from a stream opened with
// openOutput, keeping its text by step label.
type liveReader struct {
	t      *testing.T
	ctx    context.Context
	chunks <-chan api.OutputChunk
	run    string
	text   map[string]string // by step label
	ended  bool
}

// until reads chunks until done says so, failing the test when the
// stream or the run ends first.
func (l *liveReader) until(what string, done func() bool) {
	l.t.Helper()
	for !done() {
		select {
		case oc, ok := <-l.chunks:
			if !ok {
				l.t.Fatalf("the stream ended before %s; got %q", what, l.text)
			}
			if oc.RunID != l.run {
				continue
			}
			if oc.End {
				l.ended = true
				if !done() {
					l.t.Fatalf("the run ended before %s; got %q", what, l.text)
				}
				return
			}
			l.text[oc.Step] += oc.Text
		case <-l.ctx.Done():
			l.t.Fatalf("no %s; got %q", what, l.text)
		}
	}
}

// TestLiveOutputGitStep: a git_diff step's diff reaches a follower of
// the live output while git still runs. The repository's z/.gitattributes
// is a FIFO: git, a real one over a real repository, writes the diff of
// a.txt (80 KB) and then blocks opening it, to read the attributes of
// z/file, until the test opens it for writing: the first lines are seen
// before that, so before the step ends.
func TestLiveOutputGitStep(t *testing.T) {
	e := newEnv(t, "", map[string]string{"gitlive.yaml": `steps:
  - name: diff
    type: git_diff
    workspace: repo
    base_branch: base
    max_output: 200000
skip_llm: true
`})
	repo := e.path("repo")
	gitc := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
			"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+e.dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(repo, "z"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("repo/a.txt", "a\n")
	e.write("repo/z/file", "f\n")
	gitc("init", "-q")
	gitc("add", "-A")
	gitc("commit", "-q", "-m", "first")
	gitc("branch", "base")
	var big strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&big, "line %d of a changed file\n", i)
	}
	e.write("repo/a.txt", big.String())
	e.write("repo/z/file", "f\ng\n")
	gitc("commit", "-q", "-a", "-m", "second")
	fifo := filepath.Join(repo, "z", ".gitattributes")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	e.serve()
	c := e.socketClient()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	chunks := c.openOutput(ctx, "/v1/output?hook=gitlive")
	code, body := c.call("POST", "/v1/hooks/gitlive/fire", api.FireRequest{})
	var fired api.RunAnswer
	if code != 200 || json.Unmarshal(body, &fired) != nil {
		t.Fatalf("fire: %d %s", code, body)
	}
	l := &liveReader{t: t, ctx: ctx, chunks: chunks, run: fired.Run.ID, text: map[string]string{}}
	const label = "step_0 (diff)"
	l.until("the diff's first lines", func() bool { return strings.Contains(l.text[label], "+line 10 of a changed file\n") })
	// git cannot have ended: nothing opened the FIFO for writing yet.
	if run := e.getRun(fired.Run.ID); run.Status != "running" || l.ended {
		t.Fatalf("the run is %s (ended: %v) while git waits on the FIFO", run.Status, l.ended)
	}
	// Let git read the attributes: each time it opens the FIFO (it does
	// more than once), give it an empty file, until the run is over.
	waitFor(t, "the run to end, with git given its attributes", func() bool {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			f.Close()
		} else if !errors.Is(err, syscall.ENXIO) {
			t.Fatalf("open the FIFO: %v", err)
		}
		return e.getRun(fired.Run.ID).Status != "running"
	}, nil)
	l.until("the run's end", func() bool { return l.ended })
	run := e.waitRun(fired.Run.ID, "completed")
	if got := l.text[label]; got != run.Steps[0].Output || !strings.Contains(got, "+g\n") {
		t.Errorf("live output (%d bytes) differs from the step's output (%d bytes); its end:\n%s",
			len(got), len(run.Steps[0].Output), got[max(0, len(got)-300):])
	}
}

// TestLiveOutputHandler: what a lifecycle handler's command writes
// reaches a follower of the run's live output while the handler runs
// (it waits for a file the test makes only after it saw the first line),
// under "handler LABEL (POINT)", with the hook's secret, which the
// handler writes in two pieces, redacted whole.
func TestLiveOutputHandler(t *testing.T) {
	e := newEnv(t, "", nil)
	e.write("hooks.d/hlive.yaml", "secrets: [MY_SECRET]\nsteps:\n  - type: shell\n    command: \"true\"\n    secrets: [MY_SECRET]\nskip_llm: true\n")
	e.write("hooks.d/audit.yaml", `on: step:after
timeout: 60s
env_passthrough: [MY_SECRET]
command:
  - sh
  - -c
  - |
    echo handler-started; printf '%0300d\n' 0
    printf '%s' "$MY_SECRET" | head -c 5
    touch `+e.dir+`/half
    while [ ! -f `+e.dir+`/go ]; do sleep 0.01; done
    printf '%s' "$MY_SECRET" | tail -c +6; echo
    echo handler-done; printf '%0300d\n' 0
`)
	e.environ = []string{"MY_SECRET=" + hookSecret}
	e.serve()
	c := e.socketClient()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	chunks := c.openOutput(ctx, "/v1/output?hook=hlive")
	code, body := c.call("POST", "/v1/hooks/hlive/fire", api.FireRequest{})
	var fired api.RunAnswer
	if code != 200 || json.Unmarshal(body, &fired) != nil {
		t.Fatalf("fire: %d %s", code, body)
	}
	l := &liveReader{t: t, ctx: ctx, chunks: chunks, run: fired.Run.ID, text: map[string]string{}}
	const label = "handler audit (step:after)"
	l.until("the handler's first line", func() bool { return strings.Contains(l.text[label], "handler-started\n") })
	waitFor(t, "the handler to write half the secret", func() bool { return e.exists("half") }, nil)
	if l.ended {
		t.Fatal("the run ended while its handler waits")
	}
	e.write("go", "")
	l.until("the run's end", func() bool { return l.ended })
	got := l.text[label]
	if !strings.Contains(got, "\n[REDACTED:MY_SECRET]\nhandler-done\n") {
		t.Errorf("the handler's live output %q: want the secret redacted whole, then the last line", got)
	}
	if lk := leaked(got); lk != "" || strings.Contains(got, hookSecret[:5]) {
		t.Errorf("the handler's live output gives away %s (or the secret's first half): %q", lk, got)
	}
	e.waitRun(fired.Run.ID, "completed")
}
