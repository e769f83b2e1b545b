package main

import (
	"context"
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
	"github.com/hookd/hookd/store"
)

// replayHook reads notes.txt with the model's read_file after a shell
// step: a real hook whose runs hookd replay replays.
const replayHook = `steps:
  - type: shell
    command: echo disk 91%
prompt: "Disk report: {{step_0}}. Say whether to act."
tools: [read_file]
`

// replayEnv is a project whose model is a scripted server, with one
// recorded run of the ask hook: the model read notes.txt, then answered.
func replayEnv(t *testing.T) (*env, *llmtest.Server) {
	model := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "c1", Name: "read_file", Args: `{"path":"notes.txt"}`}),
		llmtest.Reply{Content: "Act: clean /var/log.", Usage: &llmtest.Usage{Prompt: 100, Completion: 20}},
	)
	t.Cleanup(model.Close)
	e := newEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", map[string]string{"ask.yaml": replayHook})
	e.write("notes.txt", "the log rotation is broken\n")
	return e, model
}

// TestReplayFromTheCLI follows a user: a run is recorded through the
// daemon, the prompt is changed, and `hookd replay RUN` renders the new
// prompt from the recorded step output, asks the model, answers its
// read_file from the record (the file has changed since: the recorded
// contents are what the model gets), and shows both answers. No run is
// added to the history; the tokens count in the daemon's spend.
func TestReplayFromTheCLI(t *testing.T) {
	e, model := replayEnv(t)
	e.serve()
	id := runID(t, e.must(0, "fire", "ask", "--wait"))

	e.write("notes.txt", "CHANGED since the run\n")
	e.write("hooks.d/ask.yaml", strings.Replace(replayHook, "Say whether to act.", "Answer in one word.", 1))
	waitFor(t, "the reload", func() bool {
		return strings.Contains(e.run("render", "ask").stdout, "one word")
	}, nil)
	model.Push(
		llmtest.Calls(llmtest.ToolCall{ID: "r1", Name: "read_file", Args: `{ "path": "notes.txt" }`}),
		llmtest.Reply{Content: "Act.", Usage: &llmtest.Usage{Prompt: 70, Completion: 2}},
	)
	r := e.must(0, "replay", id[:10])
	for _, want := range []string{
		"replay of run " + id + " (hook ask): changed",
		"prompt: changed",
		"completed", "110 in, 25 out", "80 in, 7 out", "1: read_file", // the scripted calls report 10 in and 5 out
		"recorded answer:\n  Act: clean /var/log.",
		"replay answer:\n  Act.",
		"nothing was written to the run history",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("replay's output lacks %q:\n%s", want, r)
		}
	}
	reqs := model.Requests()
	last := reqs[len(reqs)-1].Chat.Messages
	if got := reqs[len(reqs)-2].Chat.Messages[0].Content; !strings.HasSuffix(got, `Disk report: "disk 91%". Answer in one word.`) {
		t.Errorf("replayed prompt %q: not rendered from the recorded step output with the new prompt", got)
	}
	if got := last[len(last)-1].Content; !strings.Contains(got, "the log rotation is broken") || strings.Contains(got, "CHANGED") {
		t.Errorf("the model got %q for read_file: want the recorded contents, the tool must not run", got)
	}
	if runs := e.listRuns(); len(runs) != 1 {
		t.Errorf("%d runs in the history after a replay, want 1", len(runs))
	}
	var st struct {
		Spend budget.Spend `json:"spend"`
	}
	if err := json.Unmarshal([]byte(e.must(0, "status", "--json").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if got := st.Spend.Hooks["ask"].Day.Tokens; got != 135+87 {
		t.Errorf("the hook's spend today is %d tokens, want the run's 135 and the replay's 87", got)
	}
	// A replay is not a run: the spend counts it apart.
	if day := st.Spend.Hooks["ask"].Day; day.Runs != 1 || day.Replays != 1 {
		t.Errorf("the hook's spend today counts %d runs and %d replays, want 1 and 1", day.Runs, day.Replays)
	}
	// The API takes a replay's usage only: a run's is the run's to record.
	if code, out := e.socketClient().call("POST", "/v1/usage", map[string]any{"run_id": "x", "hook": "ask", "at": time.Now(), "prompt": 5}); code != 400 {
		t.Errorf("POST /v1/usage without the replay tag: %d %s", code, out)
	}
}

// TestReplayLastSummary: --hook NAME --last N replays the hook's latest
// runs that reached the model, with another model, and sums them up;
// a tool call the record has no result for makes a replay diverged.
func TestReplayLastSummary(t *testing.T) {
	e, model := replayEnv(t)
	e.serve()
	first := runID(t, e.must(0, "fire", "ask", "--wait"))
	model.Push(llmtest.Answer("No action."))
	second := runID(t, e.must(0, "fire", "ask", "--wait"))

	// Newest first: the second run's replay answers the same; the
	// first's reads a file the record never read.
	model.Push(
		llmtest.Answer("No action."),
		llmtest.Calls(llmtest.ToolCall{ID: "r1", Name: "read_file", Args: `{"path":"other.txt"}`}),
		llmtest.Answer("Cannot tell."),
	)
	r := e.must(0, "replay", "--hook", "ask", "--last", "5", "--model", "other-model", "--json")
	var sum replaySummaryJSON
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if len(sum.Replays) != 2 || sum.Replays[0].Run != second || sum.Replays[1].Run != first {
		t.Fatalf("replays %+v, want the two runs newest first", sum.Replays)
	}
	if sum.Counts[engine.ReplaySame] != 1 || sum.Counts[engine.ReplayDiverged] != 1 || sum.Replays[1].NotRecorded[0].Tool != "read_file" {
		t.Errorf("counts %v, not recorded %+v", sum.Counts, sum.Replays[1].NotRecorded)
	}
	if sum.Replays[0].Replay.Model != "other-model" || sum.Replays[0].Recorded.Model != "test-model" {
		t.Errorf("models: recorded %q, replay %q", sum.Replays[0].Recorded.Model, sum.Replays[0].Replay.Model)
	}
	for _, req := range model.Requests()[3:] {
		if req.Chat.Model != "other-model" {
			t.Errorf("a replay asked model %q, want --model's", req.Chat.Model)
		}
	}
	model.Push(llmtest.Answer("No action."), llmtest.Answer("No action."))
	r = e.must(0, "replay", "--hook", "ask", "--last", "2")
	for _, want := range []string{"RUN", "OUTCOME", second, "same", "1 same, 1 changed, 0 diverged, 0 failed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r)
		}
	}
}

// TestReplayWithoutDaemon: with no daemon, replay holds the database
// lock to count its tokens; a hook with a step the record lacks needs
// --live-steps, which runs it.
func TestReplayWithoutDaemon(t *testing.T) {
	e, model := replayEnv(t)
	id := runID(t, e.must(0, "fire", "ask", "--wait"))
	e.write("hooks.d/ask.yaml", strings.Replace(replayHook, "    command: echo disk 91%\n",
		"    command: echo disk 91%\n  - type: shell\n    command: echo inodes 3%\n", 1))

	served := model.Served()
	r := e.must(exitError, "replay", id)
	if !strings.Contains(r.stdout, "failed") || !strings.Contains(r.stdout, "needs --live-steps: step_1 (shell): not in the record") || model.Served() != served {
		t.Errorf("a replay with a step the record lacks:\n%s (model asked %d times)", r, model.Served()-served)
	}
	model.Push(llmtest.Answer("Fine."))
	r = e.must(0, "replay", id, "--live-steps", "--json")
	var rp replayJSON
	if err := json.Unmarshal([]byte(r.stdout), &rp); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if rp.Replay.Status != engine.StatusCompleted || !strings.Contains(rp.Replay.Prompt, "disk 91%") {
		t.Errorf("replay with --live-steps: %+v", rp.Replay)
	}
	// A candidate hook file outside hooks.d, without a name: it is a new
	// version of the recorded run's hook, whose budget it spends.
	e.write("candidate.yaml", strings.Replace(replayHook, "Say whether to act.", "Be terse.", 1))
	model.Push(llmtest.Answer("Terse."))
	r = e.must(0, "replay", id, "--hook", "candidate.yaml", "--json")
	rp = replayJSON{}
	if err := json.Unmarshal([]byte(r.stdout), &rp); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if rp.Hook != "ask" || !strings.Contains(rp.Replay.Prompt, "Be terse.") || !rp.PromptChanged {
		t.Errorf("replay with --hook candidate.yaml: hook %q, prompt %q", rp.Hook, rp.Replay.Prompt)
	}

	usage := e.usageRecords()
	if len(usage) != 3 || usage[1].Tag != budget.UsageReplay || usage[1].Total() != 15 || usage[2].Hook != "ask" {
		t.Errorf("usage records %+v, want the run's and the two replays' (tagged replay, charged to ask)", usage)
	}
}

// TestReplayUsageCannotRewriteTheLedger: POST /v1/usage adds a replay's
// record to the spend ledger and nothing else. With a run's id as its
// run_id it must not replace that run's usage (which would take the run's
// tokens out of the budgets), and with an "at" far ahead it must neither
// count in the future nor prune every record a year older than it.
func TestReplayUsageCannotRewriteTheLedger(t *testing.T) {
	e, _ := replayEnv(t)
	e.serve()
	id := runID(t, e.must(0, "fire", "ask", "--wait"))
	before := time.Now()
	for _, body := range []map[string]any{
		{"tag": "replay", "run_id": id, "hook": "ask", "at": time.Now(), "prompt": 0},
		{"tag": "replay", "run_id": "replay-1", "hook": "ask", "at": time.Now().AddDate(5, 0, 0), "prompt": 1},
	} {
		if code, out := e.socketClient().call("POST", "/v1/usage", body); code != 200 {
			t.Fatalf("POST /v1/usage %v: %d %s", body, code, out)
		}
	}
	// Counts whose sum overflows would make the ledger's sums negative,
	// and every budget would let every run through for a day.
	if code, out := e.socketClient().call("POST", "/v1/usage", map[string]any{"tag": "replay", "hook": "ask",
		"prompt": int64(math.MaxInt64), "completion": 1}); code != 400 {
		t.Errorf("POST /v1/usage with counts that overflow: %d %s", code, out)
	}
	usage := e.usageRecords()
	var run *budget.Usage
	for _, u := range usage {
		if u.RunID == id {
			run = u
		}
		if u.At.After(time.Now().Add(time.Minute)) || u.At.Before(before.Add(-time.Minute)) {
			t.Errorf("usage record %+v: recorded at the time the client said, not when it was taken", u)
		}
	}
	if run == nil || run.Tag != "" || run.Total() != 135 || len(usage) != 3 {
		t.Errorf("usage records %+v: want the run's (135 tokens, untagged) and two replays'", usage)
	}
}

// TestReplayOfALaterRunRendersTheSamePrompt: a run that had a run of its
// hook before it recorded "Last run: <time>" in its prompt; a replay with
// the hook unchanged renders that prompt again, the same, not "Last run:
// never".
func TestReplayOfALaterRunRendersTheSamePrompt(t *testing.T) {
	e, model := replayEnv(t)
	e.must(0, "fire", "ask", "--wait")
	model.Push(
		llmtest.Calls(llmtest.ToolCall{ID: "c2", Name: "read_file", Args: `{"path":"notes.txt"}`}),
		llmtest.Reply{Content: "Act: clean /var/log.", Usage: &llmtest.Usage{Prompt: 100, Completion: 20}},
	)
	id := runID(t, e.must(0, "fire", "ask", "--wait"))
	model.Push(
		llmtest.Calls(llmtest.ToolCall{ID: "r1", Name: "read_file", Args: `{"path":"notes.txt"}`}),
		llmtest.Reply{Content: "Act: clean /var/log.", Usage: &llmtest.Usage{Prompt: 100, Completion: 20}},
	)
	r := e.must(0, "replay", id, "--json")
	var rp replayJSON
	if err := json.Unmarshal([]byte(r.stdout), &rp); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if rp.PromptChanged || rp.Outcome != engine.ReplaySame || rp.Replay.Prompt != rp.Recorded.Prompt {
		t.Errorf("replay of an unchanged hook's second run: outcome %s, prompt changed %v:\nrecorded %q\nreplay   %q",
			rp.Outcome, rp.PromptChanged, rp.Recorded.Prompt, rp.Replay.Prompt)
	}
}

// TestReplayOfARunStillRunning: a run waiting for the model has no
// recorded prompt yet; replay says it has not finished, not that it did
// not reach the model.
func TestReplayOfARunStillRunning(t *testing.T) {
	model := llmtest.New(llmtest.Reply{Stall: true})
	t.Cleanup(model.Close)
	e := newEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", map[string]string{"ask.yaml": replayHook})
	e.serve()
	id := runID(t, e.must(0, "fire", "ask"))
	waitFor(t, "the model asked", func() bool { return model.Served() > 0 || len(model.Requests()) > 0 }, nil)
	r := e.run("replay", id)
	if r.code != exitError || !strings.Contains(r.stderr, "has not finished (running)") || strings.Contains(r.stderr, "did not reach the model") {
		t.Errorf("replay of a run waiting for the model:\n%s", r)
	}
}

// TestReplayLastRefusedByBudget: when the budget is spent part way
// through --last N, replay stops there, and still shows the replays it
// made (their tokens are spent) before it exits 75.
func TestReplayLastRefusedByBudget(t *testing.T) {
	e, model := replayEnv(t)
	e.must(0, "fire", "ask", "--wait") // 135 tokens
	model.Push(llmtest.Answer("No action."))
	second := runID(t, e.must(0, "fire", "ask", "--wait")) // 15
	e.write("hooks.d/ask.yaml", "budget: {per_hour: 160}\n"+replayHook)

	model.Push(llmtest.Answer("No action.")) // 15: the budget is spent after it
	r := e.run("replay", "--hook", "ask", "--last", "2")
	if r.code != exitRefused || !strings.Contains(r.stderr, "refused") {
		t.Errorf("replay --last 2 past the budget: want exit %d and the refusal:\n%s", exitRefused, r)
	}
	for _, want := range []string{second, "same", "1 same, 0 changed, 0 diverged, 0 failed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the summary of the replay made before the refusal lacks %q:\n%s", want, r)
		}
	}
}

// TestReplayInterruptedCountsItsTokens: a replay stopped by Ctrl-C after
// a model call has spent tokens still counts them in the spend ledger,
// through the daemon (else Ctrl-C would be a way around the budgets).
func TestReplayInterruptedCountsItsTokens(t *testing.T) {
	model := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "c1", Name: "read_file", Args: `{"path":"notes.txt"}`}),
		llmtest.Reply{Content: "Act: clean /var/log.", Usage: &llmtest.Usage{Prompt: 100, Completion: 20}},
	)
	t.Cleanup(model.Close)
	e := newProcEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", map[string]string{"ask.yaml": replayHook})
	e.write("notes.txt", "the log rotation is broken\n")
	e.serve() // the replay's tokens go through the daemon
	id := runID(t, e.must(0, "fire", "ask", "--wait"))

	model.Push(
		llmtest.Calls(llmtest.ToolCall{ID: "r1", Name: "read_file", Args: `{"path":"notes.txt"}`}), // 15 tokens
		llmtest.Reply{Stall: true},
	)
	asked := len(model.Requests())
	p := e.startProcess(exec.Command(hookdBin, "replay", id))
	waitFor(t, "the replay's second model call", func() bool { return len(model.Requests()) >= asked+2 }, p.log.String)
	p.signal(syscall.SIGINT)
	p.wait()

	usage := e.usageRecords()
	if len(usage) != 2 || usage[1].Tag != budget.UsageReplay || usage[1].Total() != 15 {
		t.Errorf("usage records %+v, want the run's and the interrupted replay's 15 tokens; replay's output:\n%s", usage, p.log)
	}
}

// TestReplayLiveStepsRedactedContext: with --live-steps the model gets
// what the steps gather now, not the recorded outputs, so replay does not
// say the recorded step outputs' secrets were redacted in what it saw.
func TestReplayLiveStepsRedactedContext(t *testing.T) {
	const secretHook = `secrets: [NOTES_TOKEN]
steps:
  - type: shell
    command: echo token $NOTES_TOKEN
    secrets: [NOTES_TOKEN]
prompt: "Report: {{step_0}}."
`
	model := llmtest.New(llmtest.Answer("Fine."))
	t.Cleanup(model.Close)
	e := newEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", map[string]string{"ask.yaml": secretHook})
	e.environ = append(e.environ, "NOTES_TOKEN=n0tes-t0ken-value")
	id := runID(t, e.must(0, "fire", "ask", "--wait"))

	model.Push(llmtest.Answer("Fine."))
	var rp replayJSON
	if err := json.Unmarshal([]byte(e.must(0, "replay", id, "--json").stdout), &rp); err != nil {
		t.Fatal(err)
	}
	if len(rp.Redacted) != 1 || rp.Redacted[0] != "step_0: NOTES_TOKEN" {
		t.Errorf("replay from the record: redacted %q, want step_0's NOTES_TOKEN", rp.Redacted)
	}
	e.write("hooks.d/ask.yaml", strings.Replace(secretHook, "echo token $NOTES_TOKEN", "echo no token", 1))
	model.Push(llmtest.Answer("Fine."))
	rp = replayJSON{}
	if err := json.Unmarshal([]byte(e.must(0, "replay", id, "--live-steps", "--json").stdout), &rp); err != nil {
		t.Fatal(err)
	}
	if len(rp.Redacted) != 0 || !strings.Contains(rp.Replay.Prompt, "no token") {
		t.Errorf("replay with --live-steps: redacted %q (the model saw no recorded step output), prompt %q", rp.Redacted, rp.Replay.Prompt)
	}
}

// usageRecords reads the spend ledger of e's SQLite database, oldest
// first.
func (e *env) usageRecords() []*budget.Usage {
	e.t.Helper()
	db, err := store.Open(e.path(".hookd/hookd.db"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	usage, err := db.UsageSince(ctx, time.Time{})
	if err != nil {
		e.t.Fatal(err)
	}
	return usage
}
