package config

import (
	"strings"
	"testing"
)

// TestCheck: a hook's check: names a step by its name, step_N or its
// index; one that names no step is an error at its line.
func TestCheck(t *testing.T) {
	t.Parallel()
	const steps = "steps:\n  - type: shell\n    command: make lint\n  - name: tests\n    type: shell\n    command: make test\n"
	for _, tc := range []struct {
		check string
		want  int    // the check step's index
		err   string // or the error
	}{
		{check: "tests", want: 1},
		{check: "step_0", want: 0},
		{check: "1", want: 1},
		{check: "'0'", err: `hooks.d/c.yaml:7: check: no step "0" (want a step's name, step_N or its index: step_0, tests)`},
		{check: "test", err: `hooks.d/c.yaml:7: check: no step "test" (want a step's name, step_N or its index: step_0, tests)`},
		{check: "2", err: `hooks.d/c.yaml:7: check: no step "2" (want a step's name, step_N or its index: step_0, tests)`},
		{check: "[tests]", err: `hooks.d/c.yaml:7: check: expected a string, got a list`},
	} {
		t.Run(tc.check, func(t *testing.T) {
			src := steps + "check: " + tc.check + "\n"
			h, err := ParseHook(strings.NewReader(src), "hooks.d/c.yaml", Options{Root: t.TempDir(), DefaultName: "c"})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error:\n got %v\nwant %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Check == nil || h.Check.Index != tc.want {
				t.Fatalf("check = %+v, want step %d", h.Check, tc.want)
			}
		})
	}
}
