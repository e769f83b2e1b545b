package steps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/process"
	"gopkg.in/yaml.v3"
)

// yamlDecoder is a strict engine.Decoder over a YAML string, standing in
// for the hook loader's.
type yamlDecoder string

func (d yamlDecoder) Decode(v any) error {
	dec := yaml.NewDecoder(strings.NewReader(string(d)))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// Errorf names the field, as a decoder that knows no lines does.
func (d yamlDecoder) Errorf(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
}

func newShellStep(t testing.TB, src string, timeout time.Duration) (engine.Step, error) {
	t.Helper()
	kind, ok := engine.LookupStep("shell")
	if !ok {
		t.Fatal(`step kind "shell" is not registered`)
	}
	def := &engine.StepDef{Index: 0, Name: "sh", Type: "shell", Timeout: timeout}
	return kind.New(def, yamlDecoder(src))
}

func mustShellStep(t testing.TB, src string, timeout time.Duration) engine.Step {
	t.Helper()
	s, err := newShellStep(t, src, timeout)
	if err != nil {
		t.Fatalf("New(%q): %v", src, err)
	}
	return s
}

func stepEnv(t testing.TB, event map[string]any) *engine.StepEnv {
	return &engine.StepEnv{
		Workdir: t.TempDir(),
		Env:     os.Environ(),
		Scope:   &engine.Scope{Hook: "test", Event: event},
	}
}

// yamlString quotes s for a YAML flow scalar.
func yamlString(s string) string { return fmt.Sprintf("%q", s) }

func TestShellNewErrors(t *testing.T) {
	tests := []struct {
		name, src, wantErr string
	}{
		{"missing command", `workdir: x`, "command: required"},
		{"empty command", `command: "  "`, "command: must not be empty"},
		{"empty list", `command: []`, "command: must not be an empty list"},
		{"number", `command: 5`, "command: must be a string or a list of strings"},
		{"mapping", `command: {a: b}`, "command: must be a string or a list of strings (got a mapping)"},
		{"list of non-strings", `command: [sleep, 5]`, "command: element 1 must be a string (got int 5; quote it)"},
		{"empty program", `command: ["", x]`, "command: element 0 (the program) must not be empty"},
		{"unknown field", "command: x\ncomand: y", "comand"},
		{"single-quoted placeholder", `command: "echo '{{event.x}}'"`, "command: placeholder {{event.x}} inside single quotes would not be expanded; remove the quotes"},
		{"bad placeholder in argv", `command: [echo, "{{event x}}"]`, "command: element 1"},
		{"unterminated quote", `command: "echo 'abc"`, "command: parse the command as bash: 1:6: reached EOF without closing quote `'`"},
		{"workdir dotdot", "command: x\nworkdir: ../other", `workdir: "../other" leaves the hook's workdir`},
		{"workdir dotdot inside", "command: x\nworkdir: a/../../b", "leaves the hook's workdir"},
		{"workdir absolute", "command: x\nworkdir: /tmp", "workdir: must be relative"},
		{"env reserved name", "command: x\nenv: {HOOKD_P1: x}", "reserved"},
		{"env bad placeholder", "command: x\nenv: {A: '{{'}", "env.A: unclosed placeholder"},
		// Data in a variable a program reads as its configuration: make
		// --eval=$(shell ...), tar --checkpoint-action=exec=..., and kin.
		{"env MAKEFLAGS from data", "command: make all\nenv: {MAKEFLAGS: '{{event.flags}}'}", "env.MAKEFLAGS: a value from a placeholder may not go in MAKEFLAGS"},
		{"env TAR_OPTIONS from data", "command: tar xf a.tar\nenv: {TAR_OPTIONS: '{{event.v}}'}", "env.TAR_OPTIONS"},
		{"env CFLAGS from data", "command: make\nenv: {CFLAGS: 'x {{event.v}}'}", "env.CFLAGS"},
		{"env CC from data", "command: make\nenv: {CC: '{{event.v}}'}", "env.CC"},
		{"env RUSTC_WRAPPER from data", "command: cargo build\nenv: {RUSTC_WRAPPER: '{{event.v}}'}", "env.RUSTC_WRAPPER"},
		{"env JAVA_TOOL_OPTIONS from data", "command: java -jar a.jar\nenv: {JAVA_TOOL_OPTIONS: '{{event.v}}'}", "env.JAVA_TOOL_OPTIONS"},
		{"env npm_config lower case from data", "command: npm ci\nenv: {npm_config_script_shell: '{{event.v}}'}", "env.npm_config_script_shell"},
		{"env KUBECONFIG from data", "command: kubectl get pods\nenv: {KUBECONFIG: '{{event.v}}'}", "env.KUBECONFIG"},
		{"env GCONV_PATH from data", "command: iconv -l\nenv: {GCONV_PATH: '{{event.v}}'}", "env.GCONV_PATH"},
		{"env PYTHONSTARTUP from data", "command: python3 x.py\nenv: {PYTHONSTARTUP: '{{event.v}}'}", "env.PYTHONSTARTUP"},
		{"negative max_output", "command: x\nmax_output: -1", "max_output: must be > 0 (got -1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newShellStep(t, tt.src, 0)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v; want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestShellRun(t *testing.T) {
	tests := []struct {
		name       string
		src        string
		event      map[string]any
		wantOut    string
		wantErrOut string
		wantCode   int
		wantCmd    string
	}{
		{name: "success", src: `command: echo hello`, wantOut: "hello\n", wantCmd: "echo hello"},
		{name: "exit code", src: `command: "echo out; exit 7"`, wantOut: "out\n", wantCode: 7},
		{name: "stderr", src: `command: "echo oops >&2"`, wantErrOut: "oops\n"},
		{name: "argv", src: `command: [printf, "%s|%s", "a b", "*"]`, wantOut: "a b|*", wantCmd: "printf '%s|%s' 'a b' '*'"},
		{name: "argv exit code", src: `command: [sh, -c, "exit 2"]`, wantCode: 2},
		{name: "env", src: "command: 'printf %s \"$GREETING\"'\nenv: {GREETING: 'hi {{event.who}}'}", event: map[string]any{"who": "you"}, wantOut: "hi you"},
		{name: "hook env passed", src: `command: 'printf %s "$HOOKD_TEST_VAR"'`, wantOut: "from hook"},
		{name: "non-string value is JSON", src: `command: printf %s {{event.obj}}`, event: map[string]any{"obj": map[string]any{"a": 1.0}}, wantOut: `{"a":1}`},
		{name: "step placeholder", src: `command: printf %s {{step_0}}`, wantOut: "earlier output"},
		{name: "command as written", src: `command: "echo {{event.x}}"`, event: map[string]any{"x": "v"}, wantOut: "v\n", wantCmd: "echo {{event.x}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustShellStep(t, tt.src, 0)
			env := stepEnv(t, tt.event)
			env.Env = append(env.Env, "HOOKD_TEST_VAR=from hook")
			env.Scope.Steps = []*engine.StepResult{{Index: 0, Output: "earlier output"}}
			res, err := s.Run(context.Background(), env)
			if err != nil {
				t.Fatalf("Run: %v (result %+v)", err, res)
			}
			if res.Output != tt.wantOut || res.Fields["stdout"] != tt.wantOut {
				t.Errorf("output %q, stdout field %q; want %q", res.Output, res.Fields["stdout"], tt.wantOut)
			}
			if res.Fields["stderr"] != tt.wantErrOut {
				t.Errorf("stderr %q; want %q", res.Fields["stderr"], tt.wantErrOut)
			}
			if field(res, "exit_code") != tt.wantCode {
				t.Errorf("exit_code %v; want %d", field(res, "exit_code"), tt.wantCode)
			}
			if res.Error != "" {
				t.Errorf("Error %q; a non-zero exit is not an error", res.Error)
			}
			if tt.wantCmd != "" && res.Fields["command"] != tt.wantCmd {
				t.Errorf("command %q; want %q", res.Fields["command"], tt.wantCmd)
			}
			if res.Index != 0 || res.Name != "sh" || res.Type != "shell" {
				t.Errorf("result header %+v", res)
			}
			for _, f := range []string{"timed_out", "truncated"} {
				if field(res, f) != false {
					t.Errorf("%s = %v", f, field(res, f))
				}
			}
			if _, ok := field(res, "duration_ms").(int64); !ok {
				t.Errorf("duration_ms = %#v", field(res, "duration_ms"))
			}
		})
	}
}

// TestShellInjection feeds hostile event values to commands that use them
// in every supported position. The values must arrive byte for byte and
// never run: the canary file must not appear.
func TestShellInjection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	canary := filepath.Join(dir, "pwned")
	values := []string{
		`"; touch ` + canary + `; echo "`,
		`'; touch ` + canary + `; echo '`,
		`$(touch ` + canary + `)`,
		"`touch " + canary + "`",
		"a\ntouch " + canary + "\nb",
		`${HOOKD_P1}$(touch ` + canary + `)`,
		`\"; touch ` + canary + ` #`,
		`*`,
		`  two  words  `,
		`x -n`,
		`%s%d`,
		`}} {{event.x}}`,
		"",
		"EOF\ntouch " + canary + "\nEOF",
		"tab\there ünïcödé",
	}
	commands := []struct {
		name string
		src  string
		want func(v string) string
	}{
		{"unquoted", `command: printf %s {{event.x}}`, func(v string) string { return v }},
		{"double quotes", `command: printf %s "pre {{event.x}} post"`, func(v string) string { return "pre " + v + " post" }},
		{"glued", `command: printf %s pre{{event.x}}post`, func(v string) string { return "pre" + v + "post" }},
		{"command substitution", `command: printf %s "$(printf %s {{event.x}})"`, func(v string) string { return strings.TrimRight(v, "\n") }},
		{"param default", `command: printf %s ${HOOKD_UNSET_VAR:-{{event.x}}}`, func(v string) string { return v }},
		{"heredoc", "command: |\n  cat <<EOF\n  {{event.x}}\n  EOF", func(v string) string { return v + "\n" }},
		{"argv", `command: [printf, "%s", "{{event.x}}"]`, func(v string) string { return v }},
		{"argv with text", `command: [printf, "%s", "pre {{event.x}} post"]`, func(v string) string { return "pre " + v + " post" }},
		{"env", "command: 'printf %s \"$V\"'\nenv: {V: '{{event.x}}'}", func(v string) string { return v }},
		{"twice", `command: printf '%s|%s' {{event.x}} "{{event.x}}"`, func(v string) string { return v + "|" + v }},
	}
	for _, c := range commands {
		s := mustShellStep(t, c.src, 0)
		for i, v := range values {
			t.Run(fmt.Sprintf("%s/%d", c.name, i), func(t *testing.T) {
				env := stepEnv(t, map[string]any{"x": v})
				res, err := s.Run(context.Background(), env)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if _, err := os.Stat(canary); err == nil {
					os.Remove(canary)
					t.Fatalf("value %q ran as code", v)
				}
				if want := c.want(v); res.Output != want {
					t.Errorf("value %q arrived as %q; want %q (stderr %q)", v, res.Output, want, res.Fields["stderr"])
				}
			})
		}
	}
}

func TestShellPlaceholderErrors(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "ran")
	tests := []struct {
		name, src, wantErr string
	}{
		{"missing event field", `command: touch ` + canary + ` {{event.missing}}`, `command: {{event.missing}}: no field "missing"`},
		{"missing step", `command: touch ` + canary + ` {{steps.nope.output}}`, `no step named "nope"`},
		{"argv", `command: [touch, ` + canary + `, "{{event.missing}}"]`, "command[2]: {{event.missing}}"},
		{"env", "command: touch " + canary + "\nenv: {A: '{{event.missing}}'}", "env.A: {{event.missing}}"},
		{"workdir", "command: touch " + canary + "\nworkdir: '{{event.missing}}'", "workdir: {{event.missing}}"},
		{"NUL byte", `command: touch ` + canary + ` {{event.nul}}`, "NUL byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustShellStep(t, tt.src, 0)
			res, err := s.Run(context.Background(), stepEnv(t, map[string]any{"nul": "a\x00b"}))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v; want it to contain %q", err, tt.wantErr)
			}
			if res == nil || res.Error != err.Error() || field(res, "exit_code") != -1 {
				t.Errorf("result %+v does not record the error", res)
			}
			if _, err := os.Stat(canary); err == nil {
				t.Error("the command ran although a placeholder failed")
			}
		})
	}
}

func TestShellTimeout(t *testing.T) {
	env := stepEnv(t, nil)
	pidFile := filepath.Join(env.Workdir, "pid")
	type result struct {
		res *engine.StepResult
		err error
	}
	var elapsed time.Duration
	r, timeout := testtool.UntilReady(t, 300*time.Millisecond, func(timeout time.Duration) result {
		_ = os.Remove(pidFile)
		s := mustShellStep(t, `command: "sleep 30 & echo $! > pid; sleep 30"`, timeout)
		start := time.Now()
		res, err := s.Run(context.Background(), env)
		elapsed = time.Since(start) - timeout
		return result{res, err}
	}, func(result) bool { return fileExists(pidFile) })
	res, err := r.res, r.err
	if elapsed > testtool.HangBound {
		t.Fatalf("Run took %v after the timeout: it waited for the sleep", elapsed)
	}
	if !errors.Is(err, process.ErrTimeout) || res.Error == "" {
		t.Errorf("err %v, Error %q; want a timeout", err, res.Error)
	}
	if field(res, "timed_out") != true || field(res, "exit_code") != -1 {
		t.Errorf("timed_out %v exit_code %v", field(res, "timed_out"), field(res, "exit_code"))
	}
	if !strings.Contains(res.Fields["stderr"].(string), fmt.Sprintf("hookd: command timed out after %s; process group killed", timeout)) {
		t.Errorf("stderr %q", res.Fields["stderr"])
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	if !testtool.WaitGone(pid, 5*time.Second) {
		t.Errorf("background grandchild %d survived the timeout", pid)
	}
}

func TestShellOutputCap(t *testing.T) {
	s := mustShellStep(t, "command: 'printf HEAD; head -c 1000 /dev/zero | tr \"\\0\" x; printf TAIL'\nmax_output: 20", 0)
	res, err := s.Run(context.Background(), stepEnv(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := "HEADxxxxxx\n[hookd: 988 bytes truncated]\nxxxxxxTAIL"
	if res.Output != want || field(res, "truncated") != true {
		t.Errorf("output %q truncated %v; want %q", res.Output, field(res, "truncated"), want)
	}
}

func TestShellWorkdir(t *testing.T) {
	root := t.TempDir()
	hook := filepath.Join(root, "hook")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(hook, "sub", "deep"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"escape":   outside,
		"relesc":   "../outside",
		"inside":   filepath.Join(hook, "sub"),
		"relinner": "sub/deep",
	} {
		if err := os.Symlink(target, filepath.Join(hook, link)); err != nil {
			t.Fatal(err)
		}
	}
	realHook, err := filepath.EvalSymlinks(hook)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		workdir string
		event   string
		wantDir string // empty: want an error
		wantErr string
	}{
		{workdir: "", wantDir: realHook},
		{workdir: ".", wantDir: realHook},
		{workdir: "sub", wantDir: filepath.Join(realHook, "sub")},
		{workdir: "sub/deep/..", wantDir: filepath.Join(realHook, "sub")},
		{workdir: "inside", wantDir: filepath.Join(realHook, "sub")},
		{workdir: "relinner", wantDir: filepath.Join(realHook, "sub", "deep")},
		{workdir: "escape", wantErr: "outside the hook's workdir"},
		{workdir: "relesc", wantErr: "outside the hook's workdir"},
		{workdir: "missing", wantErr: "no such file or directory"},
		{workdir: "{{event.dir}}", event: "sub", wantDir: filepath.Join(realHook, "sub")},
		{workdir: "{{event.dir}}", event: "../outside", wantErr: "leaves the hook's workdir"},
		{workdir: "{{event.dir}}", event: "/etc", wantErr: "must be relative"},
	}
	for _, tt := range tests {
		t.Run(tt.workdir+tt.event, func(t *testing.T) {
			src := "command: pwd -P"
			if tt.workdir != "" {
				src += "\nworkdir: " + yamlString(tt.workdir)
			}
			s := mustShellStep(t, src, 0)
			env := stepEnv(t, map[string]any{"dir": tt.event})
			env.Workdir = hook
			res, err := s.Run(context.Background(), env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(res.Error, "workdir: ") {
					t.Fatalf("err = %v, Error %q; want a workdir error containing %q", err, res.Error, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(res.Output); got != tt.wantDir {
				t.Errorf("ran in %s; want %s", got, tt.wantDir)
			}
		})
	}
}

func TestShellStartFailure(t *testing.T) {
	s := mustShellStep(t, `command: [hookd-no-such-program]`, 0)
	res, err := s.Run(context.Background(), stepEnv(t, nil))
	if err == nil || res.Error == "" || field(res, "exit_code") != -1 {
		t.Errorf("err %v, result %+v; want a start failure", err, res)
	}
}

func TestShellTemplates(t *testing.T) {
	s := mustShellStep(t, "command: [echo, '{{step_0}}']\nworkdir: '{{event.d}}'\nenv: {B: '{{steps.x.y}}', A: a}", 0)
	got := s.(interface{ Templates() []string }).Templates()
	want := []string{"echo", "{{step_0}}", "{{event.d}}", "a", "{{steps.x.y}}"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Templates() = %q; want %q", got, want)
	}
}

// BenchmarkShellOverhead runs `true` through the shell step and through a
// bare exec.Command("sh", "-c", "true") in alternation, and reports each
// one's time per run and their ratio.
func BenchmarkShellOverhead(b *testing.B) {
	s := mustShellStep(b, `command: "true"`, 0)
	env := &engine.StepEnv{Workdir: b.TempDir(), Env: os.Environ(), Scope: &engine.Scope{}}
	ctx := context.Background()
	var step, bare time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if res, err := s.Run(ctx, env); err != nil || field(res, "exit_code") != 0 {
			b.Fatalf("step: %v", err)
		}
		t1 := time.Now()
		if err := exec.Command("sh", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		bare += time.Since(t1)
		step += t1.Sub(t0)
		n++
	}
	b.ReportMetric(float64(step.Nanoseconds())/float64(n), "step-ns/op")
	b.ReportMetric(float64(bare.Nanoseconds())/float64(n), "bare-ns/op")
	b.ReportMetric(float64(step)/float64(bare), "ratio")
}

// TestShellSharesNoEnvironmentChange: steps of a run share its
// environment: a step's env: and placeholder variables reach its own
// command only, never the run's slice nor a later step, whether or not
// the step adds any (one that adds none runs with the run's slice as it
// is).
func TestShellSharesNoEnvironmentChange(t *testing.T) {
	env := stepEnv(t, map[string]any{"who": "you"})
	env.Env = append(make([]string, 0, len(env.Env)+16), env.Env...) // room to append in place
	run := slices.Clone(env.Env)
	steps := []struct{ src, want string }{
		{"command: 'printf %s \"${GREETING-none}\"'\nenv: {GREETING: 'hi {{event.who}}'}", "hi you"},
		{"command: 'printf %s {{event.who}}'", "you"},
		{"command: 'printf %s \"${GREETING-none}\"; env | grep -c HOOKD_P || true'", "none0\n"},
		{"command: [sh, -c, 'printf %s \"${GREETING-none}\"']", "none"},
	}
	for i, st := range steps {
		res, err := mustShellStep(t, st.src, 0).Run(context.Background(), env)
		if err != nil || res.Output != st.want {
			t.Fatalf("step %d: output %q, %v; want %q", i, res.Output, err, st.want)
		}
		if !slices.Equal(env.Env, run) || !slices.Equal(env.Env[:cap(env.Env)][len(run):], make([]string, cap(env.Env)-len(run))) {
			t.Fatalf("step %d changed the run's environment", i)
		}
	}
}
