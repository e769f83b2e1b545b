package steps

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// streamAttack is a template whose data reaches a program that runs it
// as code through a stream: a program's output, a file descriptor, a
// coprocess. Run with value as {{event.v}}, it makes the file MARK.
type streamAttack struct{ name, tmpl, value, want string }

// asRun writes tmpl's placeholder as hookd rewrites it: bare on a line
// of its own in a here-document, "${HOOKD_P1}" elsewhere (the tables
// write placeholders unquoted).
func asRun(tmpl string) string {
	s := strings.ReplaceAll(tmpl, "\n{{event.v}}\n", "\n${HOOKD_P1}\n")
	return strings.ReplaceAll(s, "{{event.v}}", `"${HOOKD_P1}"`)
}

// runStreamAttacks asserts that each template is refused when the step
// is built, naming the context, and that the attack is real: the script
// hookd would have run, run by bash (or else /bin/sh) with the value
// hookd would pass, makes the marker. Were a template built, the built step is run under
// bash and the test reports whether the marker was made.
func runStreamAttacks(t *testing.T, tests []streamAttack) {
	bash := testtool.Need(t, "bash")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "MARK")
			s, err := newShellStep(t, "command: "+yamlString(tt.tmpl), 0)
			if err == nil {
				env := &engine.StepEnv{Workdir: dir, Env: os.Environ(), Scope: &engine.Scope{Hook: "h", Event: map[string]any{"v": tt.value}}}
				c, cerr := s.(*shellStep).command(env)
				if cerr != nil {
					t.Fatalf("command: %v", cerr)
				}
				c.Argv[0] = bash
				c.Run(context.Background())
				t.Fatalf("%q: built (the event's value ran as code: %v); want it refused (%s)", tt.tmpl, fileExists(marker), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%q: %v; want an error saying %q", tt.tmpl, err, tt.want)
			}
			// Without the rule: the script as hookd would run it, by
			// bash or else by /bin/sh (which expands aliases). A program
			// not in every base system is needed to show the attack.
			for _, p := range []string{"envsubst"} {
				if strings.Contains(tt.tmpl, p) {
					testtool.Need(t, p)
				}
			}
			var out []byte
			for _, sh := range []string{bash, "/bin/sh"} {
				cmd := exec.Command(sh, "-c", asRun(tt.tmpl))
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "HOOKD_P1="+tt.value)
				out, _ = cmd.CombinedOutput()
				if fileExists(marker) {
					return
				}
			}
			t.Fatalf("the attack did not work without the rule (output %q): the test shows nothing", out)
		})
	}
}

// TestShellStillLoads lists scripts near the stream rules that hold data
// and must still load: text piped into a shell, a file read with $(<
// f), a descriptor written to, a coprocess that does not run code.
func TestShellStillLoads(t *testing.T) {
	for _, tmpl := range []string{
		"echo {{event.v}}; printf 'echo hi\\n' | sh",
		"echo {{event.v}}; x=$(< /etc/hostname); echo \"$x\"",
		"< /etc/hostname",
		"echo {{event.v}}; cat <<EOF | sh\necho hi\nEOF",
		"echo {{event.v}} | sort | head -n1",
		"echo {{event.v}}; v=$(git rev-parse --short HEAD); echo \"$v\"",
		"\"$(command -v go)\" test ./... -run {{event.t}}",
		"echo {{event.v}}; exec 3>/dev/null; echo x >&3; exec 3>&-",
		"echo {{event.v}}; exec </dev/null; exec <&-",
		"printf '%s\\n' {{event.v}} >&2 2>/dev/stderr",
		"echo {{event.v}}; export V=1; printenv V | tr 1 2",
		"export V={{event.v}}; printenv V",
		"coproc cat; echo {{event.v}} >&\"${COPROC[1]}\"",
		"echo {{event.v}}; cat setup.sh | sh",
		"echo {{event.v}} | sh -c 'cat > out.txt'",
		"while IFS= read -r l; do echo \"[$l]\"; done <<< {{event.v}}",
	} {
		if _, err := newShellStep(t, "command: "+yamlString(tmpl), 0); err != nil {
			t.Errorf("%q: %v; want it to load", tmpl, err)
		}
	}
}
