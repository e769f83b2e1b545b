package engine

import "testing"

// TestCheckFailed checks each row of the check table: which steps are
// checks, and which results of theirs fail the check.
func TestCheckFailed(t *testing.T) {
	t.Parallel()
	code := func(c int) *int { return &c }
	exitStep := &StepDef{Index: 0, Name: "tests", Skip: ShortCircuit{IfExitZero: true}}
	httpStep := &StepDef{Index: 0, Skip: ShortCircuit{IfStatusOK: true}}
	plain := &StepDef{Index: 0, Name: "lint"}
	empty := &StepDef{Index: 0, Skip: ShortCircuit{IfEmpty: true, IfUnchanged: true, If: "{{x}}"}}
	for _, tc := range []struct {
		name  string
		def   *StepDef
		check bool // the hook's check: names def
		res   StepResult
		want  string
	}{
		{"exit zero passes", exitStep, false, StepResult{ExitCode: code(0)}, ""},
		{"exit non-zero fails", exitStep, false, StepResult{ExitCode: code(1)}, "tests"},
		{"an error fails", exitStep, false, StepResult{Error: "no such command"}, "tests"},
		{"skipped by its if: is no failure", exitStep, false, StepResult{Skipped: true}, ""},
		{"status 2xx passes", httpStep, false, StepResult{StatusCode: 204}, ""},
		{"status 3xx fails", httpStep, false, StepResult{StatusCode: 304}, "step_0"},
		{"status 5xx fails", httpStep, false, StepResult{StatusCode: 503}, "step_0"},
		{"no check: exit is data", plain, false, StepResult{ExitCode: code(2)}, ""},
		{"check: exit fails", plain, true, StepResult{ExitCode: code(2)}, "lint"},
		{"check: 4xx fails", plain, true, StepResult{StatusCode: 404}, "lint"},
		{"check: ok passes", plain, true, StepResult{ExitCode: code(0), StatusCode: 302}, ""},
		{"skip_llm_if_empty, _unchanged and conditions are no checks", empty, false, StepResult{ExitCode: code(1), Output: "changed"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Hook{Steps: []*StepDef{tc.def}}
			if tc.check {
				h.Check = tc.def
			}
			res := tc.res
			if got := checkFailed(h, []*StepResult{&res}); got != tc.want {
				t.Errorf("checkFailed = %q, want %q", got, tc.want)
			}
		})
	}
	// The first check that failed is named; a step that did not run is not.
	h := &Hook{Steps: []*StepDef{
		{Index: 0, Skip: ShortCircuit{IfExitZero: true}},
		{Index: 1, Name: "b", Skip: ShortCircuit{IfExitZero: true}},
		{Index: 2, Name: "c", Skip: ShortCircuit{IfExitZero: true}},
	}}
	if got := checkFailed(h, []*StepResult{{ExitCode: code(0)}, {ExitCode: code(1)}}); got != "b" {
		t.Errorf("checkFailed = %q, want b", got)
	}
}

// TestExitOf: RunExits gives a completed run with check_failed 3, and
// WorstExit ranks a failure above a failed check above a run that did
// not happen above success.
func TestExitOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		run  Run
		want ExitCode
	}{
		{Run{Status: StatusCompleted}, ExitOK},
		{Run{Status: StatusCompleted, CheckFailed: "tests"}, ExitCheckFailed},
		{Run{Status: StatusFailed, CheckFailed: "tests"}, ExitError},
		{Run{Status: StatusSkipped}, ExitOK},
		{Run{Status: StatusDropped}, ExitTryAgain},
		{Run{Status: StatusCancelled}, ExitError},
		{Run{Status: StatusInterrupted}, ExitError},
		{Run{Status: StatusRunning}, ExitError},
	} {
		if got := ExitOf(&tc.run); got != tc.want {
			t.Errorf("ExitOf(%s, check_failed %q) = %d, want %d", tc.run.Status, tc.run.CheckFailed, got, tc.want)
		}
	}
	for _, s := range Statuses {
		if !s.Final() {
			continue
		}
		found := false
		for _, row := range RunExits {
			found = found || row.Status == s
		}
		if !found {
			t.Errorf("RunExits has no row for final status %s", s)
		}
	}
	for _, tc := range [][3]ExitCode{
		{ExitOK, ExitCheckFailed, ExitCheckFailed},
		{ExitError, ExitCheckFailed, ExitError},
		{ExitTryAgain, ExitOK, ExitTryAgain},
		{ExitCheckFailed, ExitTryAgain, ExitCheckFailed},
	} {
		if got := WorstExit(tc[0], tc[1]); got != tc[2] {
			t.Errorf("WorstExit(%d, %d) = %d, want %d", tc[0], tc[1], got, tc[2])
		}
	}
}
