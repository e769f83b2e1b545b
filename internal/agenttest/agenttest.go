// Package agenttest runs the real engine on a real SQLite store with
// the agent (engine/agent) over an llm.Client talking to a scripted
// chat-completions server (llm/llmtest): the model stage as hookd runs
// it, for the tests of both packages — engine/agent's for the loop's
// side, llm's for the protocol's — which assert on the run record as
// stored.
package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/llm"
	"github.com/hookd/hookd/llm/llmtest"
	"github.com/hookd/hookd/store"
)

// Tool is a tool for the tests: its name, its JSON schema and what a
// call does.
type Tool struct {
	ToolName, ToolSchema string
	Fn                   func(ctx context.Context, env *engine.ToolEnv, args json.RawMessage) (string, error)
}

func (t *Tool) Name() string            { return t.ToolName }
func (t *Tool) Description() string     { return "a test tool" }
func (t *Tool) Schema() json.RawMessage { return json.RawMessage(t.ToolSchema) }
func (t *Tool) Call(ctx context.Context, env *engine.ToolEnv, args json.RawMessage) (string, error) {
	return t.Fn(ctx, env, args)
}

// SecretValue is the value of SECRET in the engine's environment, which
// the hooks of NewHook name as a secret.
const SecretValue = "s3cr3t-value-42"

// The tools every test may list: test_echo (echoes its text), test_secret
// (returns SECRET from its environment), test_fail (panics).
func init() {
	engine.RegisterTool(&Tool{ToolName: "test_echo",
		ToolSchema: `{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer","minimum":0}},"required":["text"],"additionalProperties":false}`,
		Fn: func(_ context.Context, _ *engine.ToolEnv, args json.RawMessage) (string, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return "echo: " + a.Text, nil
		}})
	engine.RegisterTool(&Tool{ToolName: "test_secret", ToolSchema: `{"type":"object"}`,
		Fn: func(_ context.Context, env *engine.ToolEnv, _ json.RawMessage) (string, error) {
			for _, kv := range env.ToolEnviron("test_secret") {
				if v, ok := strings.CutPrefix(kv, "SECRET="); ok {
					return "the secret is " + v, nil
				}
			}
			return "", errors.New("no secret")
		}})
	engine.RegisterTool(&Tool{ToolName: "test_fail", ToolSchema: `{"type":"object"}`,
		Fn: func(context.Context, *engine.ToolEnv, json.RawMessage) (string, error) {
			panic("boom")
		}})
}

// Fixture is an engine with the agent over an llm.Client on a real
// SQLite store, asking a scripted chat-completions server.
type Fixture struct {
	T   *testing.T
	Srv *llmtest.Server
	DB  *store.DB
	Eng *engine.Engine

	mu    sync.Mutex
	Waits []time.Duration // what the client slept between attempts, instead of sleeping; read once the run ended
}

// NewHook is a hook that asks the test server.
func NewHook(t *testing.T, srv *llmtest.Server, tweak ...func(*engine.Hook)) *engine.Hook {
	h := &engine.Hook{
		Name: "ask", Enabled: true, Overlap: engine.OverlapSkip, Prompt: "What now?",
		Workdir: t.TempDir(), Timeout: 30 * time.Second, Secrets: []string{"SECRET"},
		ToolSecrets: map[string][]string{"test_secret": {"SECRET"}}, // the tool that reads it
		LLM:         engine.LLMConfig{Model: "test-model", BaseURL: srv.BaseURL()},
	}
	for _, f := range tweak {
		f(h)
	}
	return h
}

// Start builds and starts the engine of h, its client tweaked; it stops
// with the test.
func Start(t *testing.T, srv *llmtest.Server, h *engine.Hook, tweak ...func(*llm.Options)) *Fixture {
	t.Helper()
	f := &Fixture{T: t, Srv: srv}
	opts := llm.Options{
		LookupEnv: func(string) (string, bool) { return "", false },
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Sleep: func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.Waits = append(f.Waits, d)
			f.mu.Unlock()
			return ctx.Err()
		},
	}
	for _, tw := range tweak {
		tw(&opts)
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	f.DB = db
	eng, err := engine.New(engine.Config{
		Store: db, LLM: agent.New(agent.Options{Chat: llm.New(opts)}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Environ: []string{"SECRET=" + SecretValue, "PATH=/usr/bin:/bin"},
	}, []*engine.Hook{h})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.Eng = eng
	t.Cleanup(func() {
		eng.Stop()
		db.Close()
		srv.Close()
	})
	return f
}

// Fire runs the hook to its end and returns the stored record and its
// transcript. It waits for the run's end with no deadline of its own:
// the hook's timeout ends a run that hangs (the record says so); a 30 s
// bound here, as long as NewHook's timeout, failed tests whose run a
// loaded machine made slow before that run could end.
func (f *Fixture) Fire() (*engine.Run, *agent.Transcript) {
	f.T.Helper()
	ctx := f.T.Context()
	r, err := f.Eng.Fire(ctx, "ask", engine.FireOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	if _, err := f.Eng.Wait(ctx, r.ID); err != nil {
		f.T.Fatal(err)
	}
	run, err := f.DB.GetRun(ctx, r.ID)
	if err != nil {
		f.T.Fatal(err)
	}
	tr, err := agent.DecodeTranscript(run)
	if err != nil {
		f.T.Fatalf("decode transcript: %v\n%s", err, run.ToolCalls)
	}
	if tr == nil {
		f.T.Fatalf("run %s has no transcript: %+v", run.ID, run)
	}
	return run, tr
}

// FireOne is Start and Fire for a test with one hook and default options.
func FireOne(t *testing.T, srv *llmtest.Server, tweak ...func(*engine.Hook)) (*engine.Run, *agent.Transcript, *Fixture) {
	t.Helper()
	f := Start(t, srv, NewHook(t, srv, tweak...))
	run, tr := f.Fire()
	return run, tr, f
}

// WantStatus fails t unless run ended with status and an error holding
// errPart (none when errPart is "").
func WantStatus(t *testing.T, run *engine.Run, status engine.Status, errPart string) {
	t.Helper()
	if run.Status != status {
		t.Fatalf("status %s (reason %q, error %q), want %s", run.Status, run.Reason, run.Error, status)
	}
	if errPart != "" && !strings.Contains(run.Error, errPart) {
		t.Fatalf("error %q does not contain %q", run.Error, errPart)
	}
	if errPart == "" && run.Error != "" {
		t.Fatalf("unexpected error %q", run.Error)
	}
}
