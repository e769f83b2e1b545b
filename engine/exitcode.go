package engine

// ExitCode is what a hookd command exits with, for scripts to act on.
// ExitCodes and RunExits are the one table of them: the CLI reads its
// codes from here, and docs/cli.md's "Run statuses and exit codes" shows
// the same table. Add a row here, and to docs/cli.md, never beside it.
type ExitCode int

// Exit codes.
const (
	ExitOK          ExitCode = 0  // done: the run completed (or was skipped after it was queued)
	ExitError       ExitCode = 1  // an error, or the run failed, was cancelled or interrupted
	ExitUsage       ExitCode = 2  // bad arguments or flags
	ExitCheckFailed ExitCode = 3  // the run completed, but a check step did not pass (check_failed)
	ExitTryAgain    ExitCode = 75 // nothing happened; the same command may succeed later (EX_TEMPFAIL)
)

// ExitCodeInfo is a row of ExitCodes.
type ExitCodeInfo struct {
	Code  ExitCode
	Means string
}

// ExitCodes lists every exit code with what it means, in order.
var ExitCodes = []ExitCodeInfo{
	{ExitOK, "ok"},
	{ExitError, "error, or the run failed"},
	{ExitUsage, "usage: bad arguments or flags"},
	{ExitCheckFailed, "the run completed, but its check failed (check_failed)"},
	{ExitTryAgain, "nothing happened, try again: a gate refused the trigger (or the hook's where: the event of a fire), the database is locked by another hookd, or the daemon is still starting"},
}

// Flags of runs.
const (
	FlagCheckFailed = "check_failed"          // Run.CheckFailed is set
	FlagOverBudget  = string(CauseOverBudget) // the run completed with cause over_budget
)

// RunExit is a row of RunExits: a final status, with a flag of the run
// ("" for none), the exit code of a command that waited for such a run
// (`hookd fire --wait`, `hookd emit --wait`), and what it means.
type RunExit struct {
	Status Status
	Flag   string
	Code   ExitCode
	Means  string
}

// RunExits is the table of final run statuses and flags and their exit
// codes. A row with a flag comes before its status's row without one.
var RunExits = []RunExit{
	{StatusCompleted, FlagCheckFailed, ExitCheckFailed, "its steps ran and the model (if any) answered, but a check step did not pass: see check_failed"},
	{StatusCompleted, FlagOverBudget, ExitOK, "the model answered, but the call that answered took the run past budget.max_tokens_per_run: the answer is kept, with a note"},
	{StatusCompleted, "", ExitOK, "its steps ran and the model (if any) answered, or a short-circuit made the model unnecessary"},
	{StatusSkipped, "", ExitOK, "a gate refused it after it was queued (fire refuses at once with 75 when a gate refuses it at the start)"},
	{StatusFailed, "", ExitError, "a step failed it, or the model stage, its timeout or its budget did, or an MCP server its tools name did not start (mcp_server)"},
	{StatusCancelled, "", ExitError, "hookd stopped, a newer trigger superseded it (cancel_previous) or a handler cancelled it"},
	{StatusInterrupted, "", ExitError, "hookd died while it ran"},
	{StatusDropped, "", ExitTryAgain, "the global queue was full"},
}

// Flags names the flags of r that RunExits knows.
func (r *Run) Flags() []string {
	var flags []string
	if r.CheckFailed != "" {
		flags = append(flags, FlagCheckFailed)
	}
	if r.Status == StatusCompleted && r.Cause == CauseOverBudget {
		flags = append(flags, FlagOverBudget)
	}
	return flags
}

// ExitOf is the exit code of a command that waited for run r to end:
// RunExits' first row of its status whose flag r has (or that has none).
// A run that has not ended is ExitError.
func ExitOf(r *Run) ExitCode {
	flags := r.Flags()
	for _, row := range RunExits {
		if row.Status != r.Status {
			continue
		}
		if row.Flag == "" {
			return row.Code
		}
		for _, f := range flags {
			if f == row.Flag {
				return row.Code
			}
		}
	}
	return ExitError
}

// exitRank orders the exit codes of runs from the best to the worst.
var exitRank = []ExitCode{ExitOK, ExitTryAgain, ExitCheckFailed, ExitError, ExitUsage}

// WorstExit is the worse of two exit codes, for a command that waited
// for several runs (`hookd emit --wait`): a failure outweighs a failed
// check, which outweighs a run that did not happen, which outweighs
// success.
func WorstExit(a, b ExitCode) ExitCode {
	if rank(a) >= rank(b) {
		return a
	}
	return b
}

func rank(c ExitCode) int {
	for i, r := range exitRank {
		if r == c {
			return i
		}
	}
	return len(exitRank)
}
