package llm_test

import (
	"context"
	"encoding/json"
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

// The tests run the real engine on a real SQLite store with the agent
// over an llm.Client talking to a scripted chat-completions server (the
// agent package's tests run it for the loop's side: this harness is the
// same), and assert on the run
// record as stored.

// testTool is a tool for the tests.
type testTool struct {
	name, schema string
	fn           func(ctx context.Context, env *engine.ToolEnv, args json.RawMessage) (string, error)
}

func (t *testTool) Name() string            { return t.name }
func (t *testTool) Description() string     { return "a test tool" }
func (t *testTool) Schema() json.RawMessage { return json.RawMessage(t.schema) }
func (t *testTool) Call(ctx context.Context, env *engine.ToolEnv, args json.RawMessage) (string, error) {
	return t.fn(ctx, env, args)
}

const secretValue = "s3cr3t-value-42"

func init() {
	engine.RegisterTool(&testTool{name: "test_echo",
		schema: `{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer","minimum":0}},"required":["text"],"additionalProperties":false}`,
		fn: func(_ context.Context, _ *engine.ToolEnv, args json.RawMessage) (string, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return "echo: " + a.Text, nil
		}})
}

// fixture is an engine with the agent over an llm.Client on a real store.
type fixture struct {
	t     *testing.T
	srv   *llmtest.Server
	db    *store.DB
	eng   *engine.Engine
	mu    sync.Mutex
	waits []time.Duration
}

// newHook is a hook that asks the test server.
func newHook(t *testing.T, srv *llmtest.Server, tweak ...func(*engine.Hook)) *engine.Hook {
	h := &engine.Hook{
		Name: "ask", Enabled: true, Overlap: engine.OverlapSkip, Prompt: "What now?",
		Workdir: t.TempDir(), Timeout: 30 * time.Second, Secrets: []string{"SECRET"},
		LLM: engine.LLMConfig{Model: "test-model", BaseURL: srv.BaseURL()},
	}
	for _, f := range tweak {
		f(h)
	}
	return h
}

func start(t *testing.T, srv *llmtest.Server, h *engine.Hook, tweak ...func(*llm.Options)) *fixture {
	t.Helper()
	f := &fixture{t: t, srv: srv}
	opts := llm.Options{
		LookupEnv: func(string) (string, bool) { return "", false },
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Sleep: func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.waits = append(f.waits, d)
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
	f.db = db
	eng, err := engine.New(engine.Config{
		Store: db, LLM: agent.New(agent.Options{Chat: llm.New(opts)}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Environ: []string{"SECRET=" + secretValue, "PATH=/usr/bin:/bin"},
	}, []*engine.Hook{h})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.eng = eng
	t.Cleanup(func() {
		eng.Stop()
		db.Close()
		srv.Close()
	})
	return f
}

// fire runs the hook to its end and returns the stored record and its
// transcript.
func (f *fixture) fire() (*engine.Run, *agent.Transcript) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := f.eng.Fire(ctx, "ask", engine.FireOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.eng.Wait(ctx, r.ID); err != nil {
		f.t.Fatal(err)
	}
	run, err := f.db.GetRun(ctx, r.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	tr, err := agent.DecodeTranscript(run)
	if err != nil {
		f.t.Fatalf("decode transcript: %v\n%s", err, run.ToolCalls)
	}
	if tr == nil {
		f.t.Fatalf("run %s has no transcript: %+v", run.ID, run)
	}
	return run, tr
}

// fireOne is start + fire for a test with one hook and default options.
func fireOne(t *testing.T, srv *llmtest.Server, tweak ...func(*engine.Hook)) (*engine.Run, *agent.Transcript, *fixture) {
	t.Helper()
	f := start(t, srv, newHook(t, srv, tweak...))
	run, tr := f.fire()
	return run, tr, f
}

func wantStatus(t *testing.T, run *engine.Run, status engine.Status, errPart string) {
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
