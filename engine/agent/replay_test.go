package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/agenttest"
	"github.com/hookd/hookd/llm/llmtest"
)

// replayCalls counts the calls of the replay_read tool: a replay must
// make none.
var replayCalls atomic.Int64

func init() {
	engine.RegisterTool(&agenttest.Tool{ToolName: "replay_read",
		ToolSchema: `{"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer"}},"required":["path"]}`,
		Fn: func(_ context.Context, _ *engine.ToolEnv, args json.RawMessage) (string, error) {
			replayCalls.Add(1)
			var a struct{ Path string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			if a.Path == "missing" {
				// The error names the secret: the record keeps it redacted.
				return "", errors.New("no such file (token " + agenttest.SecretValue + ")")
			}
			return "contents of " + a.Path, nil
		}})
}

// recordReplayRun makes the recorded run a replay starts from: the model
// reads two files (one missing) and answers; the event carries the
// secret, which the record keeps redacted.
func recordReplayRun(t *testing.T, tweak ...func(*engine.Hook)) (*agenttest.Fixture, *engine.Hook, *engine.Run) {
	t.Helper()
	srv := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "c1", Name: "replay_read", Args: `{"path":"a.txt","n":1}`},
			llmtest.ToolCall{ID: "c2", Name: "replay_read", Args: `{"path":"missing"}`}),
		llmtest.Answer("a.txt is fine"),
	)
	h := agenttest.NewHook(t, srv, append([]func(*engine.Hook){func(h *engine.Hook) {
		h.Tools = []string{"replay_read"}
		h.Prompt = "Check {{event.path}} (token {{event.token}})."
	}}, tweak...)...)
	f := agenttest.Start(t, srv, h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := f.Eng.Fire(ctx, "ask", engine.FireOptions{Event: map[string]any{"path": "a.txt", "token": agenttest.SecretValue}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Eng.Wait(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	rec, err := f.DB.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	agenttest.WantStatus(t, rec, engine.StatusCompleted, "")
	if len(rec.Tools) != 2 || strings.Contains(string(rec.Event), agenttest.SecretValue) {
		t.Fatalf("recorded run: tools %+v, event %s", rec.Tools, rec.Event)
	}
	return f, h, rec
}

// TestReplayAnswersToolsFromTheRecord: a replay with a changed prompt
// renders it from the recorded event, calls the model, and answers its
// tool calls from the record (the same arguments in another order and
// spacing included, and the recorded error); no tool runs, no run is
// stored, and the tokens are counted as a replay's.
func TestReplayAnswersToolsFromTheRecord(t *testing.T) {
	f, h, rec := recordReplayRun(t)
	before := replayCalls.Load()
	f.Srv.Push(
		llmtest.Calls(llmtest.ToolCall{ID: "r1", Name: "replay_read", Args: `{ "n": 1, "path": "a.txt" }`},
			llmtest.ToolCall{ID: "r2", Name: "replay_read", Args: `{"path":"missing"}`}),
		llmtest.Reply{Content: "a.txt is fine; missing is missing", Usage: &llmtest.Usage{Prompt: 40, Completion: 7}},
	)
	changed := *h
	changed.Prompt = "Look at {{event.path}} again."
	ctx := context.Background()
	rp, err := f.Eng.Replay(ctx, rec, &changed, engine.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	agenttest.WantStatus(t, rp.Run, engine.StatusCompleted, "")
	if got := replayCalls.Load() - before; got != 0 {
		t.Errorf("the tool ran %d times during the replay", got)
	}
	if rp.Run.Prompt != "Look at a.txt again." || !rp.PromptChanged {
		t.Errorf("prompt %q (changed %v)", rp.Run.Prompt, rp.PromptChanged)
	}
	if len(rp.Run.Tools) != 2 || rp.Run.Tools[0].Result != "contents of a.txt" || rp.Run.Tools[0].Outcome != engine.ToolOK ||
		rp.Run.Tools[1].Outcome != engine.ToolError || !strings.Contains(rp.Run.Tools[1].Error, "no such file") {
		t.Errorf("replayed tool calls %+v", rp.Run.Tools)
	}
	if reqs := f.Srv.Requests(); reqs[len(reqs)-1].Chat.Messages[2].Content != "contents of a.txt" {
		t.Errorf("the model did not get the recorded result: %+v", reqs[len(reqs)-1].Chat.Messages)
	}
	if rp.Diverged() || rp.Outcome() != engine.ReplayChanged {
		t.Errorf("outcome %s, diverged %v", rp.Outcome(), rp.Diverged())
	}
	// The model got the recorded error of the second call, redacted: the
	// replay says so as it does of the event.
	if len(rp.Redacted) != 2 || rp.Redacted[0] != "event: SECRET" || rp.Redacted[1] != "tool call 2 (replay_read): SECRET" {
		t.Errorf("redacted %q, want the event's SECRET and the second tool call's", rp.Redacted)
	}
	if rp.Usage == nil || rp.Usage.Tag != budget.UsageReplay || rp.Usage.Prompt != 50 || rp.Usage.Hook != "ask" {
		t.Fatalf("usage %+v", rp.Usage)
	}
	if err := f.Eng.AddUsage(ctx, rp.Usage); err != nil {
		t.Fatal(err)
	}
	runs, err := f.DB.ListRuns(ctx, engine.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs stored (%v), want only the recorded one", len(runs), err)
	}
	usage, err := f.DB.UsageSince(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(usage) != 2 || usage[1].Tag != budget.UsageReplay || usage[1].RunID == rec.ID {
		t.Errorf("usage records %+v, want the run's and the replay's", usage)
	}
}

// TestReplayDiverges: a tool call the record has no result for gets a
// tool error and the replay counts as diverged; the tool does not run.
func TestReplayDiverges(t *testing.T) {
	f, h, rec := recordReplayRun(t)
	before := replayCalls.Load()
	f.Srv.Push(llmtest.Calls(llmtest.ToolCall{ID: "r1", Name: "replay_read", Args: `{"path":"b.txt"}`}), llmtest.Answer("b?"))
	rp, err := f.Eng.Replay(context.Background(), rec, h, engine.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := replayCalls.Load() - before; got != 0 {
		t.Errorf("the tool ran %d times", got)
	}
	if !rp.Diverged() || rp.Outcome() != engine.ReplayDiverged || len(rp.NotRecorded) != 1 ||
		!strings.Contains(rp.NotRecorded[0].Error, "not recorded") || rp.PromptChanged {
		t.Errorf("outcome %s, not recorded %+v, prompt changed %v", rp.Outcome(), rp.NotRecorded, rp.PromptChanged)
	}
}

// TestReplayLiveTools: with LiveTools the tool runs.
func TestReplayLiveTools(t *testing.T) {
	f, h, rec := recordReplayRun(t)
	before := replayCalls.Load()
	f.Srv.Push(llmtest.Calls(llmtest.ToolCall{ID: "r1", Name: "replay_read", Args: `{"path":"b.txt"}`}), llmtest.Answer("b is fine"))
	rp, err := f.Eng.Replay(context.Background(), rec, h, engine.ReplayOptions{LiveTools: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := replayCalls.Load() - before; got != 1 || rp.Run.Tools[0].Result != "contents of b.txt" || rp.Diverged() {
		t.Errorf("tool ran %d times, tools %+v", got, rp.Run.Tools)
	}
}

// TestReplayNeedsLiveSteps: a hook with a step the record has no result
// of fails the replay, naming the step, without calling the model.
func TestReplayNeedsLiveSteps(t *testing.T) {
	f, h, rec := recordReplayRun(t)
	served := f.Srv.Served()
	now := *h
	now.Steps = []*engine.StepDef{{Index: 0, Type: "shell", Name: "probe"}}
	rp, err := f.Eng.Replay(context.Background(), rec, &now, engine.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	agenttest.WantStatus(t, rp.Run, engine.StatusFailed, "needs --live-steps: step_0 (probe) (shell): not in the record")
	if f.Srv.Served() != served || rp.Usage != nil || rp.Outcome() != engine.ReplayFailed {
		t.Errorf("the model was called (%d requests), usage %+v", f.Srv.Served()-served, rp.Usage)
	}
}

// TestReplaySpentBudget: a replay spends the hook's budget, and a spent
// budget refuses it.
func TestReplaySpentBudget(t *testing.T) {
	f, h, rec := recordReplayRun(t, func(h *engine.Hook) { h.Budget.PerDay = 20 })
	_, err := f.Eng.Replay(context.Background(), rec, h, engine.ReplayOptions{})
	var g *engine.GateError
	if !errors.As(err, &g) || g.Gate != engine.GateBudget {
		t.Fatalf("replay over a spent budget: %v, want the budget gate", err)
	}
}

// TestReplayNotReplayable: a run that did not reach the model is not
// replayed.
func TestReplayNotReplayable(t *testing.T) {
	f, h, rec := recordReplayRun(t)
	short := *rec
	short.Prompt, short.Status, short.Reason = "", engine.StatusCompleted, "short-circuit: nothing changed"
	_, err := f.Eng.Replay(context.Background(), &short, h, engine.ReplayOptions{})
	if err == nil || !strings.Contains(err.Error(), "did not reach the model (completed: short-circuit: nothing changed)") {
		t.Fatalf("err %v", err)
	}
}

// TestReplayKeepsTheRecordedHooksSecrets: a replay with another
// definition of the hook that lists fewer secrets (hookd replay --hook
// FILE) still redacts the values the recorded hook kept secret.
func TestReplayKeepsTheRecordedHooksSecrets(t *testing.T) {
	f, h, rec := recordReplayRun(t)
	f.Srv.Push(llmtest.Answer("the token is " + agenttest.SecretValue))
	candidate := *h
	candidate.Secrets, candidate.ToolSecrets = nil, nil
	rp, err := f.Eng.Replay(context.Background(), rec, &candidate, engine.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rp.Run.Response, agenttest.SecretValue) || !strings.Contains(rp.Run.Response, "[REDACTED:SECRET]") {
		t.Errorf("the replay's answer %q: the recorded hook's secret is not redacted", rp.Run.Response)
	}
}
