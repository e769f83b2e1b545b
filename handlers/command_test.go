package handlers_test

import (
	"strconv"

	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/handlers"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/sandbox"
)

// script writes a shell script and returns a handler running it.
func script(t *testing.T, body string, failClosed bool) *config.Handler {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return &config.Handler{File: path, On: engine.PointToolCallBefore, Label: "test-handler", Enabled: true,
		Command: []string{path}, Priority: 100, Timeout: 5 * time.Second, FailClosed: failClosed,
		// The tests' scripts write what they saw to files of their own.
		Sandbox: config.ProcessSandbox{Writes: []string{os.TempDir()}}}
}

func call(t *testing.T, h *config.Handler) engine.Outcome {
	t.Helper()
	r := engine.NewRegistry()
	r.SetLogger(nil)
	handlers.NewSet(r, nil).Apply([]*config.Handler{h}, nil)
	return r.Call(context.Background(), h.On, &engine.Payload{
		Hook: &engine.Hook{Name: "triage"}, RunID: "run1", ToolName: "run_command", ToolInput: json.RawMessage(`{"argv":["ls"]}`),
	})
}

func TestCommandHandlerExitCodes(t *testing.T) {
	for _, c := range []struct {
		name       string
		body       string
		failClosed bool
		cancelled  bool
		reason     string
		changes    map[string]string
	}{
		{name: "exit 0 allows", body: "cat >/dev/null; echo fine; exit 0"},
		{name: "exit 0 with JSON allow", body: `cat >/dev/null; echo '{"decision":"allow"}'`},
		{name: "exit 0 updated_input", body: `cat >/dev/null; echo '{"updated_input":{"argv":["ls","-l"]}}'`,
			changes: map[string]string{"tool_input": `{"argv":["ls","-l"]}`}},
		{name: "exit 0 JSON block", body: `cat >/dev/null; echo '{"decision":"block","reason":"policy"}'`,
			cancelled: true, reason: "policy"},
		{name: "exit 2 blocks with stderr", body: "cat >/dev/null; echo 'no rm here' >&2; exit 2",
			cancelled: true, reason: "no rm here"},
		{name: "exit 1 fail_open", body: "cat >/dev/null; echo broken >&2; exit 1"},
		{name: "exit 1 fail_closed", body: "cat >/dev/null; echo broken >&2; exit 1", failClosed: true,
			cancelled: true, reason: "handler failed (fail_closed): exit status 1: broken"},
		{name: "malformed JSON fail_open", body: `cat >/dev/null; echo '{"decision":'`},
		{name: "malformed JSON fail_closed", body: `cat >/dev/null; echo '{"decision":'`, failClosed: true,
			cancelled: true, reason: "handler failed (fail_closed): stdout is not a valid JSON object: unexpected end of JSON input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := call(t, script(t, c.body, c.failClosed))
			if o.Cancelled != c.cancelled || o.Reason != c.reason || (c.cancelled && o.By != "test-handler") {
				t.Fatalf("outcome %+v", o)
			}
			for k, want := range c.changes {
				got, _ := o.Changes[k].(json.RawMessage)
				if string(got) != want || o.ChangedBy[k] != "test-handler" {
					t.Errorf("change %s = %s by %q, want %s", k, got, o.ChangedBy[k], want)
				}
			}
			if c.changes == nil && len(o.Changes) > 0 {
				t.Errorf("unexpected changes %v", o.Changes)
			}
		})
	}
}

func TestCommandHandlerPayload(t *testing.T) {
	out := filepath.Join(t.TempDir(), "stdin.json")
	h := script(t, "cat > "+out+"; echo \"$HOOKD_POINT $HOOKD_HOOK\" >> "+out+".env", false)
	call(t, h)
	var in handlers.Input
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatalf("stdin %q: %v", data, err)
	}
	if in.HookEventName != "tool:call:before" || in.Hook != "triage" || in.RunID != "run1" ||
		in.ToolName != "run_command" || string(in.ToolInput) != `{"argv":["ls"]}` {
		t.Errorf("stdin %s", data)
	}
	env, _ := os.ReadFile(out + ".env")
	if strings.TrimSpace(string(env)) != "tool:call:before triage" {
		t.Errorf("env %q", env)
	}
}

// TestCommandHandlerEnv: a handler's command gets the allowlist, its
// env_passthrough and HOOKD_*, not hookd's credentials.
func TestCommandHandlerEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-daemon-0123456789")
	t.Setenv("HOOKD_TOKEN", "daemon-token-0123456789")
	t.Setenv("HANDLER_VAR", "wanted")
	out := filepath.Join(t.TempDir(), "env.txt")
	h := script(t, "cat >/dev/null; env > "+out, false)
	h.EnvPassthrough = []string{"HANDLER_VAR"}
	h.Sandbox.Writes = []string{filepath.Dir(out)}
	call(t, h)
	env, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"sk-daemon", "daemon-token"} {
		if strings.Contains(string(env), leak) {
			t.Errorf("the handler saw %s:\n%s", leak, env)
		}
	}
	for _, want := range []string{"HANDLER_VAR=wanted\n", "HOOKD_POINT=tool:call:before\n", "PATH="} {
		if !strings.Contains(string(env), want) {
			t.Errorf("the handler's env lacks %q:\n%s", want, env)
		}
	}
}

func TestCommandHandlerMatch(t *testing.T) {
	h := script(t, "cat >/dev/null; echo no >&2; exit 2", false)
	h.HookGlob = "deploy-*"
	if o := call(t, h); o.Cancelled {
		t.Errorf("a handler for deploy-* hooks ran for triage: %+v", o)
	}
	h.HookGlob = "tri*"
	if o := call(t, h); !o.Cancelled {
		t.Errorf("a handler for tri* did not run for triage")
	}
}

// TestCommandHandlerContained: a handler's command writes only its dir
// and what its sandbox: declares, and has no network unless declared.
// Shown live first: with the canary's directory declared and the network
// open, the same command writes it and connects.
func TestCommandHandlerContained(t *testing.T) {
	testtool.NeedSandbox(t, sandbox.Default().Status(), testtool.Contained)
	testtool.Need(t, "bash")
	outside := testtool.CanaryDir(t)
	canary := testtool.NewTCPCanary(t)
	port := strconv.Itoa(canary.Addr.Port)
	attack := func(name string, ps config.ProcessSandbox) (wrote, connected bool) {
		h := script(t, "cat >/dev/null; echo x > "+filepath.Join(outside, name)+
			"; bash -c 'exec 3<>/dev/tcp/127.0.0.1/"+port+"'; exit 0", false)
		h.Dir = t.TempDir()
		h.Sandbox = ps
		before := canary.Count()
		call(t, h)
		_, err := os.Stat(filepath.Join(outside, name))
		return err == nil, canary.More(before)
	}
	if w, c := attack("open", config.ProcessSandbox{Writes: []string{outside}, Network: &sandbox.Network{All: true}}); !w || !c {
		t.Fatalf("the open handler wrote %v, connected %v: the test shows nothing", w, c)
	}
	if w, c := attack("shut", config.ProcessSandbox{}); w || c {
		t.Errorf("the contained handler wrote %v, connected %v", w, c)
	}
}
