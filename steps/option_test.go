package steps

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOptionInjection performs issue 10's option injections with real
// programs: a templated value that begins with '-' where a program would
// read it as an option is refused when the step runs, and nothing runs.
func TestOptionInjection(t *testing.T) {
	t.Parallel()
	workdir, env := newRepo(t, "")
	marker := filepath.Join(t.TempDir(), "X")
	goBin, _ := exec.LookPath("go")
	tests := []struct {
		name, kind, src string
		value           string
		want            string // the error must contain it
		needGo          bool
	}{
		{"git log argv --output", "shell", `command: [git, log, "{{event.v}}"]`, "--output=" + marker, `command[2]: value "--output=`, false},
		{"git log string --output", "shell", `command: git log {{event.v}}`, "--output=" + marker, `command: {{event.v}}: value "--output=`, false},
		{"git log quoted --output", "shell", `command: git log "{{event.v}}"`, "--output=" + marker, `(argument 2 of "git")`, false},
		{"git log via variable", "shell", "command: |\n  ref={{event.v}}\n  git log \"$ref\"", "--output=" + marker, `value "--output=`, false},
		{"git log via env", "shell", "command: git log \"$REF\"\nenv: {REF: '{{event.v}}'}", "--output=" + marker, `env.REF: value "--output=`, false},
		{"git in an inner shell", "shell", "command: [sh, -c, 'git log \"$REF\"']\nenv: {REF: '{{event.v}}'}", "--output=" + marker, `env.REF: value "--output=`, false},
		{"git through timeout", "shell", `command: timeout 30 git log {{event.v}}`, "--output=" + marker, `(argument 2 of "git")`, false},
		{"run_tests list -exec", "run_tests", `command: [go, test, "{{event.v}}", "."]`, `-exec=sh -c "touch ` + marker + `" sh`, `command[2]: value "-exec=sh -c`, true},
		{"run_tests string -exec", "run_tests", `command: go test {{event.v}} .`, `-exec=sh -c "touch ` + marker + `" sh`, `(argument 2 of "go")`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needGo && goBin == "" {
				t.Skip("no go on PATH")
			}
			s := mustStep(t, tt.kind, tt.src, 0)
			e := gitStepEnv(t, workdir, env, map[string]any{"v": tt.value})
			if tt.needGo {
				writeFiles(t, e.Workdir, map[string]string{"go.mod": "module x\n", "x_test.go": "package x\nimport \"testing\"\nfunc TestX(t *testing.T) {}\n"})
			}
			res, err := runStep(t, s, e)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "allow_option_values") {
				t.Errorf("err = %v; want it to contain %q", err, tt.want)
			}
			if field(res, "exit_code") != -1 {
				t.Errorf("exit_code %v: the command ran", field(res, "exit_code"))
			}
			if _, err := os.Stat(marker); err == nil {
				os.Remove(marker)
				t.Fatalf("%s: the injected option ran", tt.value)
			}
		})
	}
}

// TestOptionValuesAllowed checks the two ways out: after "--" the value
// is an operand, and allow_option_values passes it as it is.
func TestOptionValuesAllowed(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"argv after --", `command: [touch, "--", "{{event.v}}"]`, ""},
		{"string after --", `command: touch -- {{event.v}}`, ""},
		{"argv opt-in", "command: [touch, \"{{event.v}}\"]\nallow_option_values: true", "touch: "},
		{"glued text", `command: [printf, "%s", "x{{event.v}}"]`, ""},
		{"option spelled by the author", `command: [printf, "%s", "--opt={{event.v}}"]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustShellStep(t, tt.src, 0)
			e := stepEnv(t, map[string]any{"v": "-rf"})
			res, err := s.Run(t.Context(), e)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tt.want != "" {
				// touch read -rf as options: the opt-in passed it as it is.
				if !strings.Contains(res.Fields["stderr"].(string), tt.want) {
					t.Errorf("stderr %q; want touch to see the options", res.Fields["stderr"])
				}
				return
			}
			if strings.Contains(tt.src, "touch") {
				if _, err := os.Stat(filepath.Join(e.Workdir, "-rf")); err != nil {
					t.Errorf("after --, the value should name a file: %v", err)
				}
			}
		})
	}
	newErrTests(t, "shell", []struct{ name, src, want string }{
		{"misspelled opt-in", "command: x\nallow_option_value: true", "allow_option_value"},
		{"opt-in not a bool", "command: x\nallow_option_values: maybe", "cannot unmarshal"},
	})
}
