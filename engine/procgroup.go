package engine

import (
	"context"
	"fmt"
	"strings"
)

// ProcGroup names a process group a run's step started, so that a hookd
// started after a crash can tell whether it still runs (and is the same
// group, not a reused pid) and kill it before anything new runs.
type ProcGroup struct {
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start,omitempty"` // the leader's start time, in clock ticks after boot (/proc/PID/stat)
	Boot  string `json:"boot,omitempty"`  // the boot it ran in (/proc/sys/kernel/random/boot_id)
	Step  int    `json:"step"`            // the index of the step that started it; -1 for a tool of the model stage
}

// InterruptedPolicy is what hookd does at start with a hook's run that
// the previous hookd left interrupted.
type InterruptedPolicy string

// Interrupted-run policies.
const (
	InterruptedLeave InterruptedPolicy = "leave" // record it interrupted, nothing more (default)
	InterruptedRerun InterruptedPolicy = "rerun" // run it again once, with the same event, at start
)

// tracker returns how step (-1: a tool of the model stage) of run records
// the process groups it starts (nil when the store keeps none, or for a
// preview).
func (e *Engine) tracker(run *Run, step int, preview bool) func(ProcGroup) {
	ps, ok := e.cfg.Store.(ProcStore)
	if !ok || preview {
		return nil
	}
	return func(g ProcGroup) {
		g.Step = step
		if err := ps.AddRunProc(context.Background(), run.ID, g); err != nil {
			e.log.Error("record a step's process group", "hook", run.Hook, "run", run.ID, "pgid", g.PGID, "err", err)
		}
	}
}

// reapInterrupted kills what the steps of run, interrupted by a crash,
// left running, and says so in its record.
func (s *state) reapInterrupted(r *Run) {
	if s.cfg.Reap == nil || len(r.Procs) == 0 {
		return
	}
	var killed []string
	for _, g := range r.Procs {
		k, err := s.cfg.Reap(g)
		if err != nil {
			s.e.log.Error("kill a process group left by the previous hookd", "hook", r.Hook, "run", r.ID, "pgid", g.PGID, "err", err)
		}
		killed = append(killed, k...)
	}
	if len(killed) == 0 {
		return
	}
	s.e.log.Warn("killed processes an interrupted run left running", "hook", r.Hook, "run", r.ID, "processes", killed)
	r.Reason = fmt.Sprintf("%s; at the next start hookd killed %d process(es) its steps had left running: %s",
		r.Reason, len(killed), strings.Join(killed, ", "))
	s.finishRecord(r)
}
