package engine

// ProcGroup names a process group a run's step started, so that a hookd
// started after a crash can tell whether it still runs (and is the same
// group, not a reused pid) and kill it before anything new runs.
type ProcGroup struct {
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start,omitempty"` // the leader's start time, in clock ticks after boot (/proc/PID/stat)
	Boot  string `json:"boot,omitempty"`  // the boot it ran in (/proc/sys/kernel/random/boot_id)
	Step  int    `json:"step,omitempty"`  // the index of the step that started it
}

// InterruptedPolicy is what hookd does at start with a hook's run that
// the previous hookd left interrupted.
type InterruptedPolicy string

// Interrupted-run policies.
const (
	InterruptedLeave InterruptedPolicy = "leave" // record it interrupted, nothing more (default)
	InterruptedRerun InterruptedPolicy = "rerun" // run it again once, with the same event, at start
)
