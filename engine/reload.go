package engine

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
)

// ReloadReport says what a reload changed, by hook name.
type ReloadReport struct {
	Added     []string `json:"added,omitempty"`
	Changed   []string `json:"changed,omitempty"`
	Removed   []string `json:"removed,omitempty"`
	Unchanged int      `json:"unchanged"`
	// Cancelled lists the queued or pending runs of removed hooks, which
	// were cancelled with reason "removed: ...".
	Cancelled []string `json:"cancelled,omitempty"`
}

// Empty reports whether the reload changed nothing.
func (r ReloadReport) Empty() bool {
	return len(r.Added)+len(r.Changed)+len(r.Removed) == 0
}

// Reload replaces the engine's hooks with hooks, on the loop, between two
// triggers:
//
//   - a hook with a new name is added and scheduled from now (slots that
//     passed before it existed are not caught up);
//   - a hook whose file version changed replaces the old definition. A run
//     in flight finishes with the definition it started with; runs that
//     start later (queued, pending, new triggers) use the new one. Its
//     state is kept: paused, last start, last slot (a slot never fires
//     twice), the run in flight and the queue. If its schedule changed it
//     is rescheduled from now; its event registration is replaced;
//   - a hook that is no longer given is removed: it is unscheduled, its
//     event registration dropped, and its queued and pending runs are
//     cancelled (reason "removed: ..."); a run in flight finishes. If a
//     hook of that name comes back before the run ends, it is still in
//     flight for the gates.
//
// Hook names must be unique. Reload does not touch file watches: the
// watcher is told about the new set by whoever reloads.
func (e *Engine) Reload(ctx context.Context, hooks []*Hook) (ReloadReport, error) {
	seen := make(map[string]bool, len(hooks))
	for _, h := range hooks {
		if seen[h.Name] {
			return ReloadReport{}, fmt.Errorf("engine: reload: hook %q given twice", h.Name)
		}
		seen[h.Name] = true
		if h.Trigger.Kind == TriggerEvent && e.cfg.Events == nil {
			return ReloadReport{}, fmt.Errorf("engine: reload: hook %q has an event trigger but Config.Events is nil", h.Name)
		}
	}
	select {
	case <-e.stopping:
		return ReloadReport{}, ErrStopped
	default:
	}
	saved, err := e.cfg.Store.HookStates(ctx)
	if err != nil {
		return ReloadReport{}, fmt.Errorf("load hook states: %w", err)
	}
	var (
		rep  ReloadReport
		rerr error
	)
	if err := e.do(ctx, func(s *state) { rep, rerr = s.reload(hooks, saved) }); err != nil {
		return ReloadReport{}, err
	}
	if rerr == nil {
		e.setDefs(hooks)
		if cl := e.cfg.Cluster; cl != nil {
			if err := cl.Loaded(ctx, hooks); err != nil {
				e.log.Warn("report the hooks to the cluster; runs of changed hooks wait for the next reload", "err", err)
			}
		}
	}
	return rep, rerr
}

// reload applies a new set of hooks; see Engine.Reload.
func (s *state) reload(hooks []*Hook, saved map[string]HookState) (ReloadReport, error) {
	var rep ReloadReport
	now := s.cfg.Clock.Now()
	want := make(map[string]*Hook, len(hooks))
	for _, h := range hooks {
		want[h.Name] = h
	}
	var removed []string
	for name := range s.hooks {
		if want[name] == nil {
			removed = append(removed, name)
		}
	}
	sort.Strings(removed)
	for _, name := range removed {
		rep.Cancelled = append(rep.Cancelled, s.removeHook(s.hooks[name], now)...)
		rep.Removed = append(rep.Removed, name)
	}

	sorted := append([]*Hook(nil), hooks...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var errs []error
	for _, h := range sorted {
		ent := s.hooks[h.Name]
		switch {
		case ent == nil:
			if ent = s.retired[h.Name]; ent != nil {
				delete(s.retired, h.Name) // back while its old run is still in flight
			} else {
				ent = newEntry(h, saved[h.Name])
				if ent.lastStatus == StatusRunning && ent.lastRunID != "" && s.live[ent.lastRunID] == nil {
					ent.lastStatus = StatusInterrupted
				}
				ent.hook = h
				errs = append(errs, s.loadStartsNow(ent, now))
			}
			old := ent.hook
			if old == h {
				old = nil
			}
			ent.hook = h
			s.hooks[h.Name] = ent
			errs = append(errs, s.applyTrigger(ent, old, now))
			rep.Added = append(rep.Added, h.Name)
		case sameDefinition(ent.hook, h):
			rep.Unchanged++
		default:
			old := ent.hook
			ent.hook = h
			if h.Rate != old.Rate {
				errs = append(errs, s.loadStartsNow(ent, now))
			}
			errs = append(errs, s.applyTrigger(ent, old, now))
			rep.Changed = append(rep.Changed, h.Name)
		}
	}
	if !s.cfg.Manual && s.schedules() {
		// Not recorded, a hook added now that never fires before a restart
		// is not caught up: worth a warning, not a failed reload.
		var err error
		s.onStore(func() { err = s.recordFirstSeen(context.Background(), now) })
		if err != nil {
			s.e.log.Warn("slots of new hooks missed before their first run and a restart will not be caught up", "err", err)
		}
	}
	return rep, errors.Join(errs...)
}

// sameDefinition reports whether a and b come from the same version of
// the same file.
func sameDefinition(a, b *Hook) bool {
	if a == b {
		return true
	}
	return a.Source.Version != "" && a.Source.File == b.Source.File &&
		a.Source.Version == b.Source.Version && a.Workdir == b.Workdir
}

// applyTrigger brings ent's event registration and schedule in line with
// its (new) hook; old is the definition it replaces, nil for a new hook.
func (s *state) applyTrigger(ent *entry, old *Hook, now time.Time) error {
	h := ent.hook
	var err error
	if old != nil && old.Trigger.Kind == TriggerEvent {
		s.cfg.Events.Remove(h.Name)
	}
	if h.Trigger.Kind == TriggerEvent {
		if aerr := s.cfg.Events.Add(h.Name, h.Trigger.Event, h.Trigger.Where); aerr != nil {
			err = fmt.Errorf("hook %s: event trigger: %w", h.Name, aerr)
		}
	}
	if s.cfg.Manual || !s.schedules() { // a cluster's scheduler schedules at its takeover
		return err
	}
	if !h.Trigger.Periodic() || h.Trigger.Schedule == nil {
		s.unschedule(ent)
		return err
	}
	if old != nil && ent.heapIdx >= 0 && sameSchedule(&old.Trigger, &h.Trigger) {
		return err // the slot it waits for is still right
	}
	ent.catchup = nil
	s.schedule(ent, now)
	if s.missedOnce(ent, now) { // a one-shot whose time passed: it fires now
		s.nextCatchup(ent)
	}
	return err
}

// sameSchedule reports whether two periodic triggers fire at the same times.
func sameSchedule(a, b *Trigger) bool {
	return a.Kind == b.Kind && a.Every == b.Every && a.Cron == b.Cron && slices.Equal(a.CronSet, b.CronSet) &&
		a.At.Equal(b.At) && a.Timezone == b.Timezone && a.Jitter == b.Jitter
}

// unschedule takes ent out of the due heap.
func (s *state) unschedule(ent *entry) {
	if ent.heapIdx >= 0 {
		heap.Remove(&s.due, ent.heapIdx)
	}
	ent.slot, ent.due = time.Time{}, time.Time{}
	ent.catchup = nil
}

// removeHook drops a hook that a reload no longer has and returns the ids
// of the runs it cancelled.
func (s *state) removeHook(ent *entry, now time.Time) []string {
	h := ent.hook
	s.unschedule(ent)
	if h.Trigger.Kind == TriggerEvent && s.cfg.Events != nil {
		s.cfg.Events.Remove(h.Name)
	}
	reason := fmt.Sprintf("removed: hook %s is no longer in the hooks directory (%s)", h.Name, h.Source.File)
	var cancelled []string
	if q := ent.queued; q != nil {
		s.dequeue(q, StatusCancelled, reason)
		cancelled = append(cancelled, q.ID)
	}
	if p := s.cancelPending(ent, reason, now); p != nil {
		cancelled = append(cancelled, p.ID)
	}
	delete(s.hooks, h.Name)
	if ent.active != nil {
		s.retired[h.Name] = ent
	}
	return cancelled
}
