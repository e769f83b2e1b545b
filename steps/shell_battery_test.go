package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/shelltest"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/process"
)

// batteryValues builds hostile values combinatorially: a prefix and a
// suffix of shell metacharacters, quotes, backslashes, newlines, globs,
// option dashes and unicode around a payload that would create marker if
// the shell ever ran it. Every stride-th of them is kept.
func batteryValues(marker string, stride int) []string {
	atoms := []string{"", "'", `"`, `\`, `\\`, "`", "$", "${", "}", "(", ")", "*", "?", "[a]", "~", "#", " ", "\t",
		"\n", "-", "--", "ü", "💥", "\x01", "%s", "!", "{a,b}"}
	m := marker
	payloads := []string{
		"$(touch " + m + ")", "`touch " + m + "`", ";touch " + m + ";", "|touch " + m, "&&touch " + m, "||touch " + m,
		"\ntouch " + m + "\n", "&touch " + m + "&", "a[$(touch " + m + ")]", "x[$(touch " + m + ")]+1",
		"$((a[$(touch " + m + ")]))", "${IFS}touch${IFS}" + m, "';touch " + m + ";'", `";touch ` + m + `;"`,
		`\";touch ` + m + `;\"`, "EOF\ntouch " + m + "\nEOF", "}}{{event.v0}}", "-exec touch " + m + " ;",
		"--output=" + m, "$'\\x74ouch' " + m,
	}
	var out []string
	n := 0
	for _, p := range atoms {
		for _, c := range payloads {
			for _, s := range atoms {
				n++
				if n%stride != 0 {
					continue
				}
				out = append(out, p+c+s)
			}
		}
	}
	return out
}

// TestShellBattery runs the real shell step over hostile values in every
// context above, under /bin/sh and under bash when present, and checks
// that each value arrived as data and that no marker file was made.
func TestShellBattery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	// HOOKD_BATTERY=full runs every value; HOOKD_TEST_LONG=1 (CI) a
	// twentieth of them (729, every prefix, payload and suffix); by
	// default, and with -short, every 119th (122 values: every context
	// under each shell still, and every prefix, payload and suffix, as
	// a stride prime to 20 and 27 keeps them; a stride of 60 kept 243
	// values but only 9 of the 20 payloads and 9 of the 27 suffixes).
	stride := 119
	switch {
	case os.Getenv("HOOKD_BATTERY") == "full":
		stride = 1
	case testtool.Long() && !testing.Short():
		stride = 20
	}
	values := batteryValues(marker, stride)
	shells := []string{"/bin/sh", testtool.Need(t, "bash")}
	const chunk = 300
	runs, checks := 0, 0
	for _, bc := range shelltest.Contexts {
		var plain, dashed []string
		for _, v := range values {
			if bc.Opt && strings.HasPrefix(v, "-") {
				dashed = append(dashed, v)
			} else {
				plain = append(plain, v)
			}
		}
		for start := 0; start < len(plain); start += chunk {
			vs := plain[start:min(start+chunk, len(plain))]
			for _, sh := range shells {
				if bc.Argv && sh != "/bin/sh" {
					continue
				}
				res, err := runBattery(t, bc, vs, sh, dir)
				runs++
				checks += len(vs)
				if _, serr := os.Stat(marker); serr == nil {
					os.Remove(marker)
					t.Fatalf("%s under %s: a value ran as code", bc.Name, sh)
				}
				if err != nil {
					t.Fatalf("%s under %s: %v", bc.Name, sh, err)
				}
				var want strings.Builder
				for _, v := range vs {
					want.WriteString(bc.Want(v))
				}
				if res.Stdout != want.String() {
					t.Errorf("%s under %s: output differs at %s\nstderr %q", bc.Name, sh, firstDiff(res.Stdout, want.String()), res.Stderr)
				}
			}
		}
		// Values that begin with '-' are refused where they would be
		// options; a refused run runs nothing.
		for _, v := range dashed {
			_, err := runBattery(t, bc, []string{v}, "/bin/sh", dir)
			runs++
			checks++
			if err == nil || !strings.Contains(err.Error(), "would be read as an option") {
				t.Errorf("%s: %q: err = %v; want an option refusal", bc.Name, v, err)
			}
			if _, serr := os.Stat(marker); serr == nil {
				os.Remove(marker)
				t.Fatalf("%s: %q ran as code", bc.Name, v)
			}
		}
	}
	t.Logf("battery: %d values x %d contexts, %d shells; %d value checks in %d runs; 0 executed", len(values), len(shelltest.Contexts), len(shells), checks, runs)
}

// runBattery builds the step for values in context bc as a hook file
// would hold it and runs it with shell as /bin/sh.
func runBattery(t *testing.T, bc shelltest.Context, values []string, shell, dir string) (process.CommandResult, error) {
	t.Helper()
	event := map[string]any{}
	var src strings.Builder
	if bc.Argv {
		src.WriteString("command: [")
		for i, f := range strings.Fields(bc.Line) {
			if i > 0 {
				src.WriteString(", ")
			}
			src.WriteString(yamlString(strings.ReplaceAll(f, `\n`, "\n")))
		}
		for j, v := range values {
			src.WriteString(", " + yamlString("{{event.v"+strconv.Itoa(j)+"}}"))
			event["v"+strconv.Itoa(j)] = v
		}
		src.WriteString("]\n")
	} else {
		var lines []string
		var env []string
		if bc.Head != "" {
			lines = append(lines, bc.Head)
		}
		for j, v := range values {
			n := strconv.Itoa(j)
			ph := "{{event.v" + n + "}}"
			event["v"+n] = v
			line := strings.ReplaceAll(strings.ReplaceAll(bc.Line, "@", n), "{{X}}", ph)
			if bc.Env != "" {
				env = append(env, fmt.Sprintf("E%s: %s", n, yamlString(strings.ReplaceAll(bc.Env, "{{X}}", ph))))
			}
			lines = append(lines, line)
		}
		if bc.Tail != nil {
			lines = append(lines, bc.Tail(len(values)))
		}
		src.WriteString("command: " + yamlString(strings.Join(lines, "\n")) + "\n")
		if len(env) > 0 {
			src.WriteString("env: {" + strings.Join(env, ", ") + "}\n")
		}
	}
	src.WriteString("max_output: 10000000\n")
	s, err := newShellStep(t, src.String(), 0)
	if err != nil {
		t.Fatalf("%s: the command does not load: %v", bc.Name, err)
	}
	env := &engine.StepEnv{Workdir: dir, Env: os.Environ(), Scope: &engine.Scope{Hook: "battery", Event: event}}
	c, err := s.(*shellStep).command(env)
	if err != nil {
		return process.CommandResult{}, err
	}
	if !bc.Argv {
		// The string form runs as /bin/sh -c SCRIPT, as documented;
		// the battery swaps in the shell under test.
		if len(c.Argv) != 3 || c.Argv[0] != "/bin/sh" || c.Argv[1] != "-c" {
			t.Fatalf("%s: the string form runs %q, not /bin/sh -c SCRIPT", bc.Name, c.Argv)
		}
		c.Argv[0] = shell
	}
	r := c.Run(context.Background())
	return r, r.Err
}

func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-40)
	return fmt.Sprintf("byte %d: got %q, want %q", i, got[from:min(len(got), i+40)], want[from:min(len(want), i+40)])
}
