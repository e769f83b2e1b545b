package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/store"
)

// call runs a registered tool the way the model stage does: the
// arguments are checked against the schema first.
func call(t *testing.T, env *engine.ToolEnv, name, args string) (string, error) {
	t.Helper()
	tool, ok := engine.LookupTool(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	s, err := agent.CompileSchema(tool.Schema())
	if err != nil {
		t.Fatalf("%s: schema: %v", name, err)
	}
	if err := s.ValidateJSON([]byte(args)); err != nil {
		return "", fmt.Errorf("schema: %w", err)
	}
	return tool.Call(context.Background(), env, json.RawMessage(args))
}

func mustCall(t *testing.T, env *engine.ToolEnv, name, args string) string {
	t.Helper()
	out, err := call(t, env, name, args)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return out
}

func wantErr(t *testing.T, env *engine.ToolEnv, name, args, part string) {
	t.Helper()
	out, err := call(t, env, name, args)
	if err == nil || !strings.Contains(err.Error(), part) {
		t.Errorf("%s %s: got %q, %v; want an error containing %q", name, args, out, err, part)
	}
}

// project is a workdir with a hooks directory inside, as in the default
// layout, and a directory outside it.
func project(t *testing.T) (*engine.ToolEnv, string) {
	t.Helper()
	base := t.TempDir()
	work := filepath.Join(base, "project")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{work, outside, filepath.Join(work, "hooks.d"), filepath.Join(work, "docs", "sub"), filepath.Join(work, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"project/README.md":       "# hello\n",
		"project/docs/a.md":       "alpha\n",
		"project/docs/sub/b.txt":  "beta\n",
		"project/.git/HEAD":       "ref\n",
		"project/hooks.d/x.yaml":  "prompt: hi\n",
		"project/bin.dat":         "ab\x00cd",
		"outside/secret.txt":      "top secret\n",
		"project/hookd.yaml":      "db: x\n",
		"project/docs/sub/c.json": "{}",
	}
	for p, body := range files {
		if err := os.WriteFile(filepath.Join(base, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(work, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(work, "hooks.d"), filepath.Join(work, "hooks-link")); err != nil {
		t.Fatal(err)
	}
	env := &engine.ToolEnv{
		Hook: &engine.Hook{Name: "me"}, RunID: "R1", Workdir: work, HooksDir: filepath.Join(work, "hooks.d"),
		Protected: []string{filepath.Join(work, "hookd.yaml")},
		Environ:   []string{"PATH=" + os.Getenv("PATH"), "GREETING=hi there"},
	}
	return env, base
}

func TestRegistered(t *testing.T) {
	want := []string{"emit_event", "fire_hook", "get_run", "http_get", "list_files", "list_runs", "read_file", "run_command", "search_runs", "write_file"}
	names := strings.Join(engine.ToolNames(), " ")
	for _, n := range want {
		tool, ok := engine.LookupTool(n)
		if !ok {
			t.Errorf("%s not registered (have %s)", n, names)
			continue
		}
		if tool.Description() == "" {
			t.Errorf("%s has no description", n)
		}
		if _, err := agent.CompileSchema(tool.Schema()); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

func TestReadFile(t *testing.T) {
	env, _ := project(t)
	if got := mustCall(t, env, "read_file", `{"path":"README.md"}`); got != "# hello\n" {
		t.Errorf("got %q", got)
	}
	if got := mustCall(t, env, "read_file", `{"path":"docs/../docs/a.md","offset":2,"max_bytes":2}`); got != "ph\n[hookd: bytes 2-4 of 6; call read_file with offset 4 for more]" {
		t.Errorf("got %q", got)
	}
	wantErr(t, env, "read_file", `{"path":"../outside/secret.txt"}`, "leaves the hook's workdir")
	wantErr(t, env, "read_file", `{"path":"/etc/passwd"}`, "outside the hook's workdir")
	wantErr(t, env, "read_file", `{"path":"escape"}`, "is a symbolic link")
	wantErr(t, env, "read_file", `{"path":"bin.dat"}`, "binary file")
	wantErr(t, env, "read_file", `{"path":"docs"}`, "is a directory")
	wantErr(t, env, "read_file", `{"path":"nope"}`, "no such file")
	wantErr(t, env, "read_file", `{}`, `missing required field "path"`)
}

func TestListFiles(t *testing.T) {
	env, _ := project(t)
	got := mustCall(t, env, "list_files", `{"path":"docs"}`)
	if got != "a.md (6 bytes)\nsub/" {
		t.Errorf("flat: %q", got)
	}
	got = mustCall(t, env, "list_files", `{"recursive":true,"pattern":"*.md"}`)
	if got != "README.md (8 bytes)\ndocs/a.md (6 bytes)" {
		t.Errorf("recursive *.md: %q", got)
	}
	got = mustCall(t, env, "list_files", `{"recursive":true}`)
	if strings.Contains(got, ".git/HEAD") || !strings.Contains(got, "docs/sub/b.txt") || !strings.Contains(got, "escape (symlink)") {
		t.Errorf("recursive: %q", got)
	}
	got = mustCall(t, env, "list_files", `{"recursive":true,"max_entries":2}`)
	if !strings.Contains(got, "stopped after 2 entries") {
		t.Errorf("limit: %q", got)
	}
	wantErr(t, env, "list_files", `{"path":".."}`, "leaves the hook's workdir")
	wantErr(t, env, "list_files", `{"path":"README.md"}`, "not a directory")
}

func TestWriteFile(t *testing.T) {
	env, base := project(t)
	env.Hook.WriteRoots = []string{"."}
	work := env.Workdir
	if got := mustCall(t, env, "write_file", `{"path":"out/report.md","content":"one\n","create_dirs":true}`); got != "wrote 4 bytes to out/report.md" {
		t.Errorf("got %q", got)
	}
	mustCall(t, env, "write_file", `{"path":"out/report.md","content":"two\n","append":true}`)
	if b, _ := os.ReadFile(filepath.Join(work, "out/report.md")); string(b) != "one\ntwo\n" {
		t.Errorf("file holds %q", b)
	}
	if err := os.Chmod(filepath.Join(work, "README.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustCall(t, env, "write_file", `{"path":"README.md","content":"new"}`)
	if b, _ := os.ReadFile(filepath.Join(work, "README.md")); string(b) != "new" {
		t.Errorf("README holds %q", b)
	}
	if fi, err := os.Stat(filepath.Join(work, "README.md")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("README lost its permissions: %v %v", fi.Mode(), err)
	}
	mustCall(t, env, "write_file", `{"path":"`+work+`/docs/abs.md","content":"abs"}`)
	wantErr(t, env, "write_file", `{"path":"hooks.d/evil.yaml","content":"x"}`, "tools cannot create or edit hooks")
	wantErr(t, env, "write_file", `{"path":"hooks.d/x.yaml","content":"x"}`, "tools cannot create or edit hooks")
	wantErr(t, env, "write_file", `{"path":"hooks-link/evil.yaml","content":"x"}`, "is a symbolic link")
	wantErr(t, env, "write_file", `{"path":"hooks.d/new/evil.yaml","content":"x","create_dirs":true}`, "tools cannot create or edit hooks")
	wantErr(t, env, "write_file", `{"path":"hookd.yaml","content":"x"}`, "tools cannot change it")
	wantErr(t, env, "write_file", `{"path":"../outside/x","content":"x"}`, "leaves the hook's workdir")
	wantErr(t, env, "write_file", `{"path":"/etc/x","content":"x"}`, "outside the hook's workdir")
	wantErr(t, env, "write_file", `{"path":"escape","content":"x"}`, "is a symbolic link")
	wantErr(t, env, "write_file", `{"path":"missing/x","content":"x"}`, "does not exist (pass create_dirs)")
	wantErr(t, env, "write_file", `{"path":"docs","content":"x"}`, "not a regular file")
	wantErr(t, env, "write_file", `{"path":"README.md/x","content":"x"}`, "not a directory")
	if _, err := os.Stat(filepath.Join(work, "hooks.d/evil.yaml")); err == nil {
		t.Error("a hook file was created")
	}
	if _, err := os.Stat(filepath.Join(work, "hooks.d/new")); err == nil {
		t.Error("a directory was created in the hooks directory")
	}
	if b, _ := os.ReadFile(filepath.Join(base, "outside/secret.txt")); string(b) != "top secret\n" {
		t.Errorf("outside file changed: %q", b)
	}
	noTempFiles(t, work)
}

func TestRunCommand(t *testing.T) {
	env, _ := project(t)
	got := mustCall(t, env, "run_command", `{"argv":["sh","-c","echo $GREETING; pwd; echo oops >&2; exit 3"]}`)
	if !strings.HasPrefix(got, "exit code: 3\n") || !strings.Contains(got, "stdout:\nhi there\n") ||
		!strings.Contains(got, "project\n") || !strings.Contains(got, "stderr:\noops\n") {
		t.Errorf("got %q", got)
	}
	got = mustCall(t, env, "run_command", `{"argv":["cat"],"stdin":"fed in","dir":"docs"}`)
	if !strings.Contains(got, "exit code: 0") || !strings.Contains(got, "stdout:\nfed in\n") {
		t.Errorf("stdin: %q", got)
	}
	got = mustCall(t, env, "run_command", `{"argv":["pwd"],"dir":"docs/sub"}`)
	if !strings.Contains(got, filepath.Join("docs", "sub")) {
		t.Errorf("dir: %q", got)
	}
	start := time.Now()
	got = mustCall(t, env, "run_command", `{"argv":["sleep","30"],"timeout_seconds":1}`)
	if !strings.Contains(got, "timed out after 1s") || time.Since(start) > 20*time.Second {
		t.Errorf("timeout: %q after %s", got, time.Since(start))
	}
	wantErr(t, env, "run_command", `{"argv":["pwd"],"dir":"../outside"}`, "leaves the hook's workdir")
	wantErr(t, env, "run_command", `{"argv":[]}`, "argv: must have at least 1 item (got 0)")
	wantErr(t, env, "run_command", `{"argv":["no-such-program-hookd"]}`, "no-such-program-hookd")
	wantErr(t, env, "run_command", `{"argv":"ls"}`, `argv: must be an array (got a string)`)

	// The command's process group goes to the run's record, and nothing
	// it left in the background outlives it.
	var tracked []engine.ProcGroup
	env.TrackProcess = func(g engine.ProcGroup) func() { tracked = append(tracked, g); return nil }
	got = mustCall(t, env, "run_command", `{"argv":["sh","-c","echo $$; sleep 100 >/dev/null 2>&1 & echo $!"]}`)
	var pgid, bg int
	if _, err := fmt.Sscanf(got[strings.Index(got, "stdout:\n")+len("stdout:\n"):], "%d\n%d", &pgid, &bg); err != nil {
		t.Fatalf("pids in %q: %v", got, err)
	}
	if len(tracked) != 1 || tracked[0].PGID != pgid || tracked[0].Start == 0 {
		t.Errorf("tracked %+v, want the group %d", tracked, pgid)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", bg)); err == nil && !strings.Contains(string(b), ") Z") {
		_ = syscall.Kill(bg, syscall.SIGKILL)
		t.Errorf("run_command's background process %d outlived it", bg)
	}
}

func TestHTTPGetRefusesPrivateAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "internal") }))
	defer srv.Close()
	env, _ := project(t)
	wantErr(t, env, "http_get", `{"url":"`+srv.URL+`"}`, "loopback address")
	wantErr(t, env, "http_get", `{"url":"http://169.254.169.254/latest/meta-data"}`, "metadata")
	wantErr(t, env, "http_get", `{"url":"file:///etc/passwd"}`, "only http and https")
}

func TestHTTPGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte{0, 1, 2})
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(strings.Repeat("x", httpMaxBody+10)))
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"auth":%q}`, r.Header.Get("X-Token"))
		}
	}))
	defer srv.Close()
	// The guard is tested above; here the client may reach the test server.
	saved := httpClient
	httpClient = srv.Client()
	defer func() { httpClient = saved }()
	env, _ := project(t)
	got := mustCall(t, env, "http_get", `{"url":"`+srv.URL+`/j","headers":{"X-Token":"abc"}}`)
	if got != "status: 200 OK\ncontent-type: application/json\n\n{\"auth\":\"abc\"}" {
		t.Errorf("got %q", got)
	}
	if got := mustCall(t, env, "http_get", `{"url":"`+srv.URL+`/bin"}`); !strings.Contains(got, "binary body, 3 bytes") {
		t.Errorf("bin: %q", got)
	}
	if got := mustCall(t, env, "http_get", `{"url":"`+srv.URL+`/big"}`); !strings.HasSuffix(got, "[hookd: body cut at 65536 bytes]") {
		t.Errorf("big: %q", got[len(got)-80:])
	}
}

func TestEmitAndFire(t *testing.T) {
	env, _ := project(t)
	env.Hook.FireHooks = []string{"triage", "busy"}
	env.Hook.EmitTypes = []string{"report.*", "audit.**"}
	var emitted []string
	env.Emit = func(_ context.Context, typ string, data map[string]any) (*engine.Emitted, error) {
		b, _ := json.Marshal(data)
		emitted = append(emitted, typ+" "+string(b))
		return &engine.Emitted{Runs: []*engine.Run{{ID: "R2", Hook: "other", Status: engine.StatusRunning}},
			Refused: []engine.Refusal{{Run: &engine.Run{ID: "R4", Hook: "deploy", Status: engine.StatusSkipped},
				Gate: &engine.GateError{Gate: engine.GateCooldown, Hook: "deploy", Remaining: 90 * time.Second, Detail: "fire it with force to skip it"}}}}, nil
	}
	env.Fire = func(_ context.Context, hook string, ev map[string]any) (*engine.Run, error) {
		if hook == "busy" {
			return nil, &engine.GateError{Gate: engine.GateInFlight, Hook: hook, RunID: "R9", Detail: "try later"}
		}
		return &engine.Run{ID: "R3", Hook: hook, Status: engine.StatusQueued}, nil
	}
	if got := mustCall(t, env, "emit_event", `{"type":"report.ready","data":{"n":1}}`); got != "event report.ready published; for the hooks it matched: 1 run(s), 1 refused by a gate\n"+
		"R2 other (running)\nR4 deploy refused: cooldown: 1m30s left; fire it with force to skip it" {
		t.Errorf("got %q", got)
	}
	if len(emitted) != 1 || emitted[0] != `report.ready {"n":1}` {
		t.Errorf("emitted %v", emitted)
	}
	wantErr(t, env, "emit_event", `{"type":"hook.run.failed"}`, "hookd's own")
	wantErr(t, env, "emit_event", `{"type":"a..b"}`, "dot-separated")
	if got := mustCall(t, env, "fire_hook", `{"hook":"triage","event":{"x":1}}`); got != "fired triage: run R3, queued" {
		t.Errorf("got %q", got)
	}
	wantErr(t, env, "fire_hook", `{"hook":"busy"}`, "refused: in flight: run R9")
	wantErr(t, env, "fire_hook", `{"hook":"me"}`, "cannot fire itself")

	// Only the targets the hook file lists.
	wantErr(t, env, "fire_hook", `{"hook":"admin"}`, `hook "admin" is not one this hook may fire (it may reach: triage, busy)`)
	wantErr(t, env, "emit_event", `{"type":"deploy.now"}`, `type "deploy.now" is not one this hook may publish (it may reach: report.*, audit.**)`)
	wantErr(t, env, "emit_event", `{"type":"report.ready.x"}`, "not one this hook may publish")
	mustCall(t, env, "emit_event", `{"type":"audit.a.b"}`)
	env.Hook.FireHooks, env.Hook.EmitTypes = nil, nil
	wantErr(t, env, "fire_hook", `{"hook":"triage"}`, "it lists none: the hook file gives them as `- fire_hook: {hooks: [...]}` in tools")
	wantErr(t, env, "emit_event", `{"type":"report.ready"}`, "it lists none: the hook file gives them as `- emit_event: {types: [...]}` in tools")
	if len(emitted) != 2 {
		t.Errorf("emitted %v", emitted)
	}
}

type fakeRecords struct{ runs []*engine.Run }

func (f fakeRecords) GetRun(_ context.Context, id string) (*engine.Run, error) {
	for _, r := range f.runs {
		if r.ID == id {
			return r, nil
		}
	}
	return nil, engine.ErrNotFound
}

func (f fakeRecords) ListRuns(_ context.Context, flt engine.RunFilter) ([]*engine.Run, error) {
	var out []*engine.Run
	for _, r := range f.runs {
		if (flt.Hook == "" || r.Hook == flt.Hook) && (flt.Status == "" || r.Status == flt.Status) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f fakeRecords) ListEvents(context.Context, string, int) ([]*engine.Event, error) {
	return nil, errors.New("not used")
}

func (f fakeRecords) SearchRuns(context.Context, engine.SearchQuery) ([]engine.SearchHit, error) {
	return nil, errors.New("not used")
}

func TestRuns(t *testing.T) {
	env, _ := project(t)
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	env.Records = fakeRecords{runs: []*engine.Run{
		{ID: "R1", Hook: "a", Status: engine.StatusFailed, Trigger: "manual", StartedAt: t0, FinishedAt: t0.Add(time.Second), Error: "boom"},
		{ID: "R0", Hook: "b", Status: engine.StatusCompleted, Trigger: "schedule", Response: "fine"},
	}}
	// The hook's own runs only, whatever the model asks.
	env.Hook = &engine.Hook{Name: "a"}
	got := mustCall(t, env, "list_runs", `{"status":"failed"}`)
	if got != "id\thook\tstatus\ttrigger\tstarted\tduration\twhy\nR1\ta\tfailed\tmanual\t2025-01-02T03:04:05Z\t1s\tboom" {
		t.Errorf("got %q", got)
	}
	if got := mustCall(t, env, "list_runs", `{}`); strings.Contains(got, "R0") {
		t.Errorf("list_runs showed another hook's run: %q", got)
	}
	wantErr(t, env, "list_runs", `{"hook":"b"}`, `hook "b" is not one whose runs this hook may read (its own only`)
	wantErr(t, env, "get_run", `{"id":"R0"}`, "no run R0")
	wantErr(t, env, "list_runs", `{"status":"weird"}`, "status: must be one of queued, running, completed, failed, skipped, dropped, cancelled, interrupted (got weird)")
	// Its file names b: b's runs are readable when asked for; others are not.
	env.Hook = &engine.Hook{Name: "a", RunHooks: []string{"b"}}
	if got := mustCall(t, env, "list_runs", `{"hook":"b"}`); !strings.Contains(got, "R0\tb\t") {
		t.Errorf("got %q", got)
	}
	if got := mustCall(t, env, "get_run", `{"id":"R0"}`); !strings.Contains(got, `"response": "fine"`) {
		t.Errorf("got %q", got)
	}
	wantErr(t, env, "list_runs", `{"hook":"c"}`, "(it may read: a, b)")
	wantErr(t, env, "get_run", `{"id":"R7"}`, "no run R7")
	// "*": every hook's, and by default.
	env.Hook = &engine.Hook{Name: "c", RunHooks: []string{"*"}}
	if got := mustCall(t, env, "list_runs", `{}`); !strings.Contains(got, "R0\tb\t") || !strings.Contains(got, "R1\ta\t") {
		t.Errorf("got %q", got)
	}
}

// TestSearchRunsTool: search_runs reads the store's full-text index of
// finished runs.
func TestSearchRunsTool(t *testing.T) {
	env, _ := project(t)
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &engine.Run{ID: engine.NewID(), Hook: "triage", Trigger: "manual", Status: engine.StatusRunning, StartedAt: t0}
	if err := db.StartRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Status, r.FinishedAt, r.Response = engine.StatusCompleted, t0, "TestLogin is flaky since the upgrade"
	if err := db.FinishRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	env.Records = db
	env.Hook = &engine.Hook{Name: "triage"}
	got := mustCall(t, env, "search_runs", `{"query":"flaky login TestLogin"}`)
	if !strings.HasPrefix(got, "id\thook\tstatus\tfinished\tscore\tsnippet\n"+r.ID+"\ttriage\tcompleted\t2025-01-02T03:04:05Z\t") ||
		!strings.Contains(got, "[flaky]") {
		t.Errorf("got %q", got)
	}
	if got := mustCall(t, env, "search_runs", `{"query":"nothing-like-it"}`); got != "(no runs match)" {
		t.Errorf("got %q", got)
	}
	// Another hook's model finds nothing of triage's, even naming it.
	env.Hook = &engine.Hook{Name: "other"}
	if got := mustCall(t, env, "search_runs", `{"query":"flaky login TestLogin"}`); got != "(no runs match)" {
		t.Errorf("another hook's model found triage's run: %q", got)
	}
	wantErr(t, env, "search_runs", `{"query":"flaky","hook":"triage"}`, `hook "triage" is not one whose runs this hook may read`)
	env.Hook = &engine.Hook{Name: "other", RunHooks: []string{"triage"}}
	if got := mustCall(t, env, "search_runs", `{"query":"flaky","hook":"triage"}`); !strings.Contains(got, r.ID) {
		t.Errorf("got %q", got)
	}
	env.Records = nil
	wantErr(t, env, "search_runs", `{"query":"x"}`, "no search index")
}
