package steps

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// benchShellConfigs are the two shell steps of the hook file that
// bench's BenchmarkLoadHookFiles loads 10,000 times, as decoded: a
// script with placeholders run by `sh -c`, and a command list.
func benchShellConfigs() map[string]*shellConfig {
	return map[string]*shellConfig{
		"script": {Command: "printf 'service %s (%s) at %s\\n' svc7 {{event.env}} {{now}}\nsystemctl status \"svc7\" 2>&1 | head -n 20\n"},
		"list":   {Command: []any{"journalctl", "-u", "svc7", "-n", "50", "--since", "{{last_run_time}}"}},
	}
}

// BenchmarkShellStepLoad builds each shell step of config's benchmark
// hook from its decoded configuration, as loading a hook file does after
// the YAML parse (placeholders, the bash parse and checks of the script,
// the list's checks), and reports the time and allocations a step.
//
//	go test -run '^$' -bench 'BenchmarkShellStepLoad' -benchmem ./steps/
func BenchmarkShellStepLoad(b *testing.B) {
	def := &engine.StepDef{Index: 0, Name: "gather", Type: "shell", Timeout: 30 * time.Second}
	for _, name := range []string{"script", "list"} {
		c := benchShellConfigs()[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := buildShell(def, yamlDecoder(""), c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestShellTaintFixedPointAttacks performs, with a real shell, attacks
// where data reaches code only through what the checker learns on a
// later pass over the script: a variable assigned from another before
// that one holds data (in a loop), and a function called before its
// declaration. The template is refused when the hook loads; the same
// script run with the value hookd would pass creates the marker file.
func TestShellTaintFixedPointAttacks(t *testing.T) {
	tests := []struct{ name, tmpl, want string }{
		{"assigned before the data", "for i in 1 2 3; do eval \"$y\"; y=$x; x={{event.v}}; done", "an argument of eval"},
		{"called before declared", "for i in 1 2; do [ \"$i\" = 2 ] && f {{event.v}}; f() { eval \"$1\"; }; done", "an argument of eval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newShellStep(t, "command: "+yamlString(tt.tmpl), 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v; want it to contain %q", err, tt.want)
			}
			script := strings.Replace(tt.tmpl, "{{event.v}}", `"${HOOKD_P1}"`, 1)
			dir := t.TempDir()
			cmd := exec.Command("/bin/sh", "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "HOOKD_P1=touch MARK")
			_ = cmd.Run()
			if _, err := os.Stat(filepath.Join(dir, "MARK")); err != nil {
				t.Fatalf("the attack did not work without the rule (%v): the test shows nothing", err)
			}
		})
	}
}
