package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ProcGroup names a process group a run's step started, so that a hookd
// started after a crash can tell whether it still runs (and is the same
// group, not a reused pid) and kill it before anything new runs.
type ProcGroup struct {
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start,omitempty"` // the leader's start time, in clock ticks after boot (/proc/PID/stat)
	// StartEnd, when set, makes Start the first of the ticks the leader
	// may have started in and StartEnd the last (process.Command reads the
	// clock around the fork instead of /proc: see process.ReapGroup).
	StartEnd uint64 `json:"start_end,omitempty"`
	Boot     string `json:"boot,omitempty"` // the boot it ran in (/proc/sys/kernel/random/boot_id)
	Step     int    `json:"step"`           // the index of the step that started it; -1 for a tool of the model stage
}

// ProcJournal keeps, outside the store, the process groups the steps of
// running runs lead, for as long as each runs (internal/procjournal: a
// file of the state directory, written with one pwrite a group, no
// commit). The record has to outlive the hookd process only: a reboot
// ends every group. When the engine has one, it records groups there and
// not in the store.
type ProcJournal interface {
	// Track records that a step of run leads g and returns the function
	// that drops the record, called once the group has ended.
	Track(run string, g ProcGroup) (done func(), err error)
	// Recorded returns what the previous process left recorded (it
	// stopped without ending those groups), by run id.
	Recorded() map[string][]ProcGroup
	// Reset drops what Recorded returns, once the engine has killed what
	// the interrupted runs left running.
	Reset() error
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
// the process groups it starts, and drops the record once the group has
// ended (nil for a preview). This is where the record's place is
// decided: the engine's ProcJournal when it has one (a pwrite, no
// commit), else the store (Store.AddRunProc: a commit; the record stays
// in the run's row).
func (e *Engine) tracker(run *Run, step int, preview bool) func(ProcGroup) (done func()) {
	if preview {
		return nil
	}
	j := e.cfg.Procs
	return func(g ProcGroup) func() {
		g.Step = step
		if j != nil {
			done, err := j.Track(run.ID, g)
			if err == nil {
				return done
			}
			e.log.Warn("record a step's process group in the store instead", "hook", run.Hook, "run", run.ID, "pgid", g.PGID, "err", err)
		}
		if err := e.cfg.Store.AddRunProc(context.Background(), run.ID, g); err != nil {
			e.log.Error("record a step's process group", "hook", run.Hook, "run", run.ID, "pgid", g.PGID, "err", err)
		}
		return nil
	}
}

// journaled gives each run interrupted by a crash the process groups the
// ProcJournal recorded for it, besides those its record holds (what a
// hookd that recorded them in the store left). It returns, with their
// groups, the runs the journal names that are not among runs but are
// stored interrupted already: a hookd that died after recovery committed
// them interrupted and before it killed their groups (or, in a cluster,
// another node marked this node's runs interrupted while it was down).
// Their groups are still to be killed. Groups recorded for a run in any
// other state are not returned: they are never killed.
func (e *Engine) journaled(ctx context.Context, runs []*Run) (earlier []*Run) {
	if e.cfg.Procs == nil {
		return nil
	}
	rec := e.cfg.Procs.Recorded()
	for _, r := range runs {
		for _, g := range rec[r.ID] {
			if !slices.Contains(r.Procs, g) {
				r.Procs = append(r.Procs, g)
			}
		}
		delete(rec, r.ID)
	}
	for id, gs := range rec {
		r, err := e.cfg.Store.GetRun(ctx, id)
		if err != nil {
			if !errors.Is(err, ErrNotFound) {
				e.log.Error("read the run of a process group left by the previous hookd", "run", id, "err", err)
			}
			continue
		}
		if r.Status != StatusInterrupted {
			continue
		}
		for _, g := range gs {
			if !slices.Contains(r.Procs, g) {
				r.Procs = append(r.Procs, g)
			}
		}
		earlier = append(earlier, r)
	}
	slices.SortFunc(earlier, func(a, b *Run) int { return strings.Compare(a.ID, b.ID) })
	return earlier
}

// resetJournal drops what the previous process recorded in the
// ProcJournal, once the interrupted runs were reaped.
func (e *Engine) resetJournal() {
	if e.cfg.Procs == nil {
		return
	}
	if err := e.cfg.Procs.Reset(); err != nil {
		e.log.Error("reset the process journal", "err", err)
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
