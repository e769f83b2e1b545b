package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/llm"
	"github.com/hookd/hookd/llm/llmtest"
	"github.com/hookd/hookd/mcp"
	"github.com/hookd/hookd/redact"
	"github.com/hookd/hookd/sandbox"
	"github.com/hookd/hookd/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverBin is a real stdio MCP server (testdata/server), built with the
// same SDK by TestMain.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hookd-mcp")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "mcpserver")
	out, err := exec.Command("go", "build", "-o", serverBin, "./testdata/server").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build test server: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newManager(t *testing.T, environ []string, servers ...mcp.ServerConfig) *mcp.Manager {
	t.Helper()
	m, err := mcp.NewManager(servers, mcp.Options{Environ: environ, Logger: quiet, RetryAfter: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func stdio(name string, env map[string]string) mcp.ServerConfig {
	return mcp.ServerConfig{Name: name, Command: []string{serverBin}, Env: env, StartTimeout: 20 * time.Second,
		Sandbox: &sandbox.Policy{}}
}

func call(t *testing.T, tool engine.Tool, args string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return tool.Call(ctx, &engine.ToolEnv{}, json.RawMessage(args))
}

func resolve(t *testing.T, m *mcp.Manager, entry string) map[string]engine.Tool {
	t.Helper()
	tools, err := m.Resolve(context.Background(), entry)
	if err != nil {
		t.Fatalf("resolve %s: %v", entry, err)
	}
	out := map[string]engine.Tool{}
	for _, tl := range tools {
		out[tl.(*mcp.Tool).Qualified()] = tl
	}
	return out
}

func TestToolsAndNames(t *testing.T) {
	m := newManager(t, os.Environ(), stdio("t", nil))
	if tools := resolve(t, m, "t.*"); len(tools) != 8 || tools["t.search.issues"] != nil {
		t.Errorf("t.* offers %v: want every tool but t.search.issues ('*' stays within a segment)", tools)
	}
	tools := resolve(t, m, "t.**")
	want := map[string]string{
		"t.add": "t__add", "t.crash": "t__crash", "t.echo": "t__echo", "t.env": "t__env", "t.fail": "t__fail",
		"t.pid": "t__pid", "t.search.issues": "t__search_issues", "t.misbehave": "t__misbehave", "t.hang": "t__hang",
	}
	if len(tools) != len(want) {
		t.Fatalf("tools %v", tools)
	}
	for q, name := range want {
		tl := tools[q]
		if tl == nil || tl.Name() != name || !engine.ToolNamePattern.MatchString(tl.Name()) {
			t.Errorf("%s: %v", q, tl)
		}
	}
	if s := string(tools["t.echo"].Schema()); !strings.Contains(s, `"text"`) || tools["t.echo"].Description() != "Echo the text back." {
		t.Errorf("echo schema %s", s)
	}
	if got := resolve(t, m, "t.e*"); len(got) != 2 || got["t.echo"] == nil || got["t.env"] == nil {
		t.Errorf("t.e*: %v", got)
	}
	if got := resolve(t, m, "t.search.issues"); len(got) != 1 {
		t.Errorf("a tool name with a dot: %v", got)
	}
	if _, err := m.Resolve(context.Background(), "t.nope"); err == nil || !strings.Contains(err.Error(), `mcp server t has no tool "nope" (it has: add, crash, echo`) {
		t.Errorf("t.nope: %v", err)
	}
	if _, err := m.Resolve(context.Background(), "x.echo"); err == nil || !strings.Contains(err.Error(), `no MCP server "x" in hookd.yaml (declared: t)`) {
		t.Errorf("x.echo: %v", err)
	}
}

func TestCall(t *testing.T) {
	m := newManager(t, []string{"PATH=" + os.Getenv("PATH"), "SECRET_SRC=abc123"}, stdio("t", map[string]string{"TEST_TOKEN": "tok-${SECRET_SRC}"}))
	tools := resolve(t, m, "t.*")
	if out, err := call(t, tools["t.echo"], `{"text":"hi"}`); err != nil || out != "echo: hi" {
		t.Errorf("echo: %q %v", out, err)
	}
	if out, err := call(t, tools["t.add"], `{"a":2,"b":3}`); err != nil || !strings.Contains(out, `"sum":5`) {
		t.Errorf("add: %q %v", out, err)
	}
	if out, err := call(t, tools["t.fail"], `{}`); err == nil || err.Error() != "the thing is broken" {
		t.Errorf("fail: %q %v", out, err)
	}
	if out, err := call(t, tools["t.env"], `{}`); err != nil || out != "tok-abc123" {
		t.Errorf("env: %q %v", out, err)
	}
}

// TestServerEnvScrubbed: a stdio server gets the allowlisted part of
// hookd's environment and its own env, not hookd's credentials.
func TestServerEnvScrubbed(t *testing.T) {
	m := newManager(t, []string{"PATH=" + os.Getenv("PATH"), "TEST_TOKEN=daemon-credential-1234", "OPENAI_API_KEY=sk-daemon"},
		stdio("t", nil))
	tools := resolve(t, m, "t.*")
	if out, err := call(t, tools["t.env"], `{}`); err != nil || out != "" {
		t.Errorf("the server saw hookd's TEST_TOKEN: %q %v", out, err)
	}
}

// TestServerStderrRedacted: a server that prints hookd's credential on
// stderr as it fails does not put it in the start error.
func TestServerStderrRedacted(t *testing.T) {
	environ := []string{"PATH=" + os.Getenv("PATH"), "GH_CRED=ghp-credential-0123456789"}
	m, err := mcp.NewManager([]mcp.ServerConfig{stdio("bad", map[string]string{"MCP_TEST_FAIL_START": "token ${GH_CRED} refused"})},
		mcp.Options{Environ: environ, Logger: quiet, RetryAfter: time.Millisecond, Redactor: redact.New([]string{"GH_CRED"}, environ)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Resolve(context.Background(), "bad.*")
	if err == nil || strings.Contains(err.Error(), "ghp-credential") || !strings.Contains(err.Error(), "token [REDACTED:GH_CRED] refused") {
		t.Errorf("start error: %v", err)
	}
}

func TestReuseAndRestartAfterCrash(t *testing.T) {
	m := newManager(t, os.Environ(), stdio("t", nil))
	tools := resolve(t, m, "t.*")
	pid1, err := call(t, tools["t.pid"], `{}`)
	if err != nil {
		t.Fatal(err)
	}
	// Resolving again (another run) reuses the running server.
	tools = resolve(t, m, "t.*")
	if pid, _ := call(t, tools["t.pid"], `{}`); pid != pid1 {
		t.Errorf("server started again: pid %s then %s", pid1, pid)
	}
	_, err = call(t, tools["t.crash"], `{}`)
	if err == nil || !strings.Contains(err.Error(), "mcp server t stopped during the call") || !strings.Contains(err.Error(), "crashing on purpose") {
		t.Fatalf("crash: %v", err)
	}
	// The next call starts it again.
	var pid2 string
	deadline := time.Now().Add(20 * time.Second)
	for {
		pid2, err = call(t, tools["t.pid"], `{}`)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the exit may not have been noticed yet
	}
	if err != nil || pid2 == pid1 || pid2 == "" {
		t.Errorf("after the crash: pid %q (was %s), %v", pid2, pid1, err)
	}
}

// TestHungCallRestartsServer: a real stdio server, which runs one call at
// a time, hangs on a call. The call fails at call_timeout saying the server is
// started again, and the next call gets its answer from a new server
// process instead of waiting on the hung one for call_timeout too.
func TestHungCallRestartsServer(t *testing.T) {
	cfg := stdio("t", nil)
	cfg.CallTimeout = time.Second
	m, err := mcp.NewManager([]mcp.ServerConfig{cfg}, mcp.Options{Environ: os.Environ(), Logger: quiet, RetryAfter: time.Millisecond,
		StopTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tools := resolve(t, m, "t.*")
	pid1, err := call(t, tools["t.pid"], `{}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = call(t, tools["t.hang"], `{}`)
	if err == nil || !strings.Contains(err.Error(), "mcp t.hang: no answer within call_timeout (1s): the server is stopped and started again for the next call") {
		t.Errorf("hang: %v", err)
	}
	pid2, err := call(t, tools["t.pid"], `{}`)
	if err != nil || pid2 == pid1 || pid2 == "" {
		t.Fatalf("the call after the hung one: pid %q (the hung server was %s), %v", pid2, pid1, err)
	}
}

func TestStartFailureFailsOnlyItsRuns(t *testing.T) {
	m := newManager(t, os.Environ(),
		stdio("bad", map[string]string{"MCP_TEST_FAIL_START": "cannot start: GITHUB_TOKEN is not set"}),
		stdio("good", nil),
		mcp.ServerConfig{Name: "missing", Command: []string{"/no/such/mcp-server"}, Sandbox: &sandbox.Policy{}},
	)
	_, err := m.Resolve(context.Background(), "bad.*")
	if err == nil || !strings.Contains(err.Error(), "start mcp server bad") || !strings.Contains(err.Error(), "stderr: cannot start: GITHUB_TOKEN is not set") {
		t.Errorf("bad: %v", err)
	}
	if _, err := m.Resolve(context.Background(), "missing.*"); err == nil || !strings.Contains(err.Error(), "/no/such/mcp-server") {
		t.Errorf("missing: %v", err)
	}
	if got := resolve(t, m, "good.echo"); len(got) != 1 {
		t.Errorf("good: %v", got)
	}
}

func TestStreamableHTTP(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "http-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "hello", Description: "Say hello."},
		func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello"}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer k-1" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	m := newManager(t, []string{"MCP_KEY=k-1"}, mcp.ServerConfig{Name: "web", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer ${MCP_KEY}"}})
	tools := resolve(t, m, "web.hello")
	if out, err := call(t, tools["web.hello"], `{}`); err != nil || out != "hello" {
		t.Errorf("hello: %q %v", out, err)
	}
	if len(auth) == 0 || auth[0] != "Bearer k-1" {
		t.Errorf("headers sent: %v", auth)
	}
	m.Close()
}

// TestHookUsesMCPTools runs the whole model stage: a hook lists MCP
// tools, the scripted model calls one by its API name, and the record
// names the tool as the hook lists it.
func TestHookUsesMCPTools(t *testing.T) {
	m := newManager(t, os.Environ(), stdio("t", nil),
		stdio("bad", map[string]string{"MCP_TEST_FAIL_START": "bad server: no credentials"}))
	model := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "c1", Name: "t__echo", Args: `{"text":"via mcp"}`},
			llmtest.ToolCall{ID: "c2", Name: "t__search_issues", Args: `{}`}),
		llmtest.Answer("done"),
	)
	defer model.Close()
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mk := func(name string, tools ...string) *engine.Hook {
		return &engine.Hook{Name: name, Enabled: true, Overlap: engine.OverlapSkip, Prompt: "go", Workdir: t.TempDir(),
			Timeout: time.Minute, Tools: tools, LLM: engine.LLMConfig{Model: "m", BaseURL: model.BaseURL()}}
	}
	eng, err := engine.New(engine.Config{Store: db, Logger: quiet,
		LLM: agent.New(agent.Options{Servers: m, Chat: llm.New(llm.Options{Logger: quiet, LookupEnv: func(string) (string, bool) { return "", false }})})},
		[]*engine.Hook{mk("uses-mcp", "t.echo", "t.search.*"), mk("uses-bad", "bad.*"), mk("plain")})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer eng.Stop()
	fire := func(name string) *engine.Run {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := eng.Fire(ctx, name, engine.FireOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Wait(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		run, err := db.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}

	run := fire("uses-mcp")
	if run.Status != engine.StatusCompleted {
		t.Fatalf("uses-mcp: %s %s", run.Status, run.Error)
	}
	tr, _ := agent.DecodeTranscript(run)
	calls := tr.Rounds[0].ToolCalls
	if len(calls) != 2 || calls[0].Tool != "t.echo" || calls[0].Result != "echo: via mcp" || calls[1].Tool != "t.search.issues" || calls[1].Result != "no issues" {
		t.Errorf("tool calls %+v", calls)
	}
	if got := strings.Join(tr.Tools, ","); got != "t__echo,t__search_issues" {
		t.Errorf("offered %s", got)
	}

	run = fire("uses-bad")
	if run.Status != engine.StatusFailed || !strings.Contains(run.Error, "tools[0]: bad.*: start mcp server bad") || !strings.Contains(run.Error, "stderr: bad server: no credentials") {
		t.Errorf("uses-bad: %s %q", run.Status, run.Error)
	}
	// No model was called: the server, not the model, failed the run.
	if run.Cause != engine.CauseMCPServer || run.Headline() != "failed (mcp_server)" || model.Served() != 2 {
		t.Errorf("uses-bad: cause %q, headline %q, model asked %d times (2 by uses-mcp)", run.Cause, run.Headline(), model.Served())
	}
	model.Push(llmtest.Answer("plain answer"))
	if run := fire("plain"); run.Status != engine.StatusCompleted || run.Response != "plain answer" {
		t.Errorf("plain: %s %q %q", run.Status, run.Error, run.Response)
	}
}

// TestServerFloodingTools: a real stdio server that lists 25,000 tools
// under HOOKD_TEST_LONG=1 (as CI runs it), 3,000 by default (nearly
// three times what hookd keeps, in three pages of 1,000: the server's start
// with 25,000 was most of the test's time). hookd keeps
// mcp.MaxServerTools of them; a hook whose pattern takes them all fails
// before the model is called, naming its file and tools:, and a hook
// naming 128 of them is offered exactly those.
func TestServerFloodingTools(t *testing.T) {
	many := strconv.Itoa(testtool.Count(3000, 25000))
	m := newManager(t, os.Environ(), stdio("t", map[string]string{"MCP_TEST_MANY_TOOLS": many}))
	tools, err := m.Tools(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != mcp.MaxServerTools {
		t.Fatalf("hookd keeps %d tools of the server, want %d", len(tools), mcp.MaxServerTools)
	}
	model := llmtest.New(llmtest.Answer("done"))
	defer model.Close()
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mk := func(name string, tools ...string) *engine.Hook {
		return &engine.Hook{Name: name, Enabled: true, Overlap: engine.OverlapSkip, Prompt: "go", Workdir: t.TempDir(),
			Timeout: time.Minute, Tools: tools, LLM: engine.LLMConfig{Model: "m", BaseURL: model.BaseURL()},
			Source: engine.Source{File: "hooks.d/" + name + ".yaml"}}
	}
	eng, err := engine.New(engine.Config{Store: db, Logger: quiet,
		LLM: agent.New(agent.Options{Servers: m, Chat: llm.New(llm.Options{Logger: quiet, LookupEnv: func(string) (string, bool) { return "", false }})})},
		[]*engine.Hook{mk("greedy", "t.echo", "t.many_*"), mk("fits", "t.many_000*", "t.many_001[0-1]*", "t.many_0012[0-7]")})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer eng.Stop()
	fire := func(name string) *engine.Run {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := eng.Fire(ctx, name, engine.FireOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Wait(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		run, err := db.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	run := fire("greedy")
	if want := "hooks.d/greedy.yaml: tools: t.many_* brings the hook's tools past 128, the most a model takes"; run.Status != engine.StatusFailed || !strings.Contains(run.Error, want) {
		t.Errorf("greedy: %s %q, want an error with %q", run.Status, run.Error, want)
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("the model was called %d times for a hook past the cap", n)
	}
	run = fire("fits")
	if run.Status != engine.StatusCompleted {
		t.Fatalf("fits: %s %q", run.Status, run.Error)
	}
	if reqs := model.Requests(); len(reqs) != 1 || len(reqs[0].Chat.Tools) != engine.MaxTools {
		t.Errorf("the model was offered %d tools, want %d", len(reqs[len(reqs)-1].Chat.Tools), engine.MaxTools)
	}
}

// TestStdioServerContained: a stdio server that misbehaves (writes
// outside its dir, connects to a loopback canary, leaves a setsid'd
// daemon behind) reaches none of it under its sandbox: entry. Shown live
// first: the same server with the canary declared writable and the
// network open does write and connect.
func TestStdioServerContained(t *testing.T) {
	testtool.NeedSandbox(t, sandbox.Default().Status(), testtool.CgroupTrees)
	outside := testtool.CanaryDir(t)
	canary := testtool.NewTCPCanary(t)
	args := func(name string) string {
		b, _ := json.Marshal(map[string]string{"path": filepath.Join(outside, name), "addr": canary.Addr.String()})
		return string(b)
	}
	escape := func(name string, p *sandbox.Policy) string {
		cfg := stdio(name, nil)
		cfg.Sandbox = p
		m := newManager(t, nil, cfg)
		out, err := call(t, resolve(t, m, name+".misbehave")[name+".misbehave"], args(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m.Close()
		return out
	}
	wd := t.TempDir()
	open := escape("open", &sandbox.Policy{Workdir: wd, Writes: []string{outside}, Network: sandbox.Network{All: true}})
	if !strings.Contains(open, "write: ok") || !strings.Contains(open, "connect: ok") {
		t.Fatalf("the open server did not escape: the test shows nothing:\n%s", open)
	}
	shut := escape("shut", &sandbox.Policy{Workdir: wd, Key: "mcp:shut"})
	if strings.Contains(shut, "write: ok") || strings.Contains(shut, "connect: ok") {
		t.Errorf("the contained server escaped:\n%s", shut)
	}
	if _, err := os.Stat(filepath.Join(outside, "shut")); err == nil {
		t.Error("the contained server wrote outside")
	}
	for _, out := range []string{open, shut} {
		_, pid, ok := strings.Cut(out, "daemon: ")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSpace(pid))
		if n > 0 && syscall.Kill(n, 0) == nil {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n)); !strings.Contains(string(b), ") Z ") {
				t.Errorf("the server's daemon %d outlived it", n)
				syscall.Kill(n, syscall.SIGKILL)
			}
		}
	}
}

// TestStdioServerWithoutNetworkKey: a stdio server that declares no
// network does not start, and says how to fix it.
func TestStdioServerWithoutNetworkKey(t *testing.T) {
	if sandbox.Default().Status().Off {
		t.Skip("sandbox off")
	}
	cfg := stdio("bare", nil)
	cfg.Sandbox = nil
	m := newManager(t, nil, cfg)
	_, err := m.Resolve(context.Background(), "bare.echo")
	if err == nil || !strings.Contains(err.Error(), "sandbox: {network: false}") {
		t.Fatalf("err = %v, want the fix", err)
	}
}
