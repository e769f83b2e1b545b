package engine

import "strconv"

// A check is a step whose failure must be heard about even when the run
// then completes: a nightly check that failed and whose model triaged it
// is no success. The check steps of a hook are those with
// skip_llm_if_exit_zero or skip_llm_if_status_ok (the model is skipped
// when they pass, so not passing is what it is called for) and the step
// its check: names. skip_llm_if_empty, skip_llm_if_unchanged and
// skip_llm_if conditions make no check: "something changed" is no
// failure.
//
// A run whose check did not pass keeps its status (completed, when the
// model then did its work) and names the step in Run.CheckFailed; it is
// shown in every listing, notify targets with on: [failed] or
// [check_failed] hear of it, retry: {on: [failed]} does not run it again
// (that would call the model again), and `hookd fire --wait` exits
// ExitCheckFailed.

// passedExit is skip_llm_if_exit_zero's test: the step ran and its
// command exited 0.
func passedExit(r *StepResult) bool { return r.Error == "" && exitZero(r) }

// passedStatus is skip_llm_if_status_ok's test: the step ran and its
// server answered 2xx.
func passedStatus(r *StepResult) bool { return r.Error == "" && status2xx(r) }

// IsCheck reports whether def is one of h's check steps.
func (h *Hook) IsCheck(def *StepDef) bool {
	return def.Skip.IfExitZero || def.Skip.IfStatusOK || h.Check != nil && h.Check.Index == def.Index
}

// CheckName is how Run.CheckFailed names a step: its name, or step_N.
func (d *StepDef) CheckName() string {
	if d.Name != "" {
		return d.Name
	}
	return "step_" + strconv.Itoa(d.Index)
}

// checkFailed names the first of h's check steps whose result in steps
// did not pass (CheckName), or "" when each passed, was skipped by its
// if: or did not run. It is the one place that decides a run's
// check_failed.
func checkFailed(h *Hook, steps []*StepResult) string {
	for i, def := range h.Steps {
		if i >= len(steps) {
			break
		}
		res := steps[i]
		if res == nil || res.Skipped || !h.IsCheck(def) {
			continue
		}
		failed := def.Skip.IfExitZero && !passedExit(res) ||
			def.Skip.IfStatusOK && !passedStatus(res) ||
			h.Check != nil && h.Check.Index == def.Index && OutcomeOfStep(res) != StepOK
		if failed {
			return def.CheckName()
		}
	}
	return ""
}
