package engine

import (
	"context"
	"time"
)

// Event types published by file watches.
const (
	EventFileChanged   = "file.changed"   // a watch whose paths name files
	EventFolderChanged = "folder.changed" // a watch of folders
)

// Operations of a watched path, as reported in file.changed and
// folder.changed payloads.
const (
	OpCreated  = "created"
	OpModified = "modified"
	OpDeleted  = "deleted"
	OpRenamed  = "renamed" // path is the new name, old_path the old one
)

// FileStamp is what a watch remembers of a file: enough to see that it
// changed.
type FileStamp struct {
	Size    int64
	ModTime time.Time
}

// WatchSnapshots keeps, per hook, the files its watch saw last, so that a
// watch with scan_on_start can fire for what changed while hookd was down.
// Package store implements it; the file watcher in package triggers uses
// it when the store given to it does.
type WatchSnapshots interface {
	// LoadSnapshot returns the files recorded for hook by path; ok is
	// false when no snapshot was ever saved for it.
	LoadSnapshot(ctx context.Context, hook string) (files map[string]FileStamp, ok bool, err error)
	// SaveSnapshot replaces hook's snapshot with files.
	SaveSnapshot(ctx context.Context, hook string, files map[string]FileStamp) error
	// UpdateSnapshot records changed files and forgets deleted ones, in one
	// transaction; it creates the snapshot if there is none.
	UpdateSnapshot(ctx context.Context, hook string, changed map[string]FileStamp, deleted []string) error
	// DeleteSnapshot forgets hook's snapshot.
	DeleteSnapshot(ctx context.Context, hook string) error
}

// FireWatch triggers one hook for a change its file watch saw. The trigger
// goes through the gates like any other, with reason "watch" and ev's type
// and payload. ev is stored in the event log, shown to subscribers (the
// live stream) and, as agent-queue's file watcher published its changes
// on the bus, dispatched to the event triggers it matches (hooks on
// file.changed or folder.changed; reason "event", so they are contained
// as hooks taking untrusted input are). The watch's own hook is not an
// event trigger: it fires once, by its watch. There is one event per
// watch, its watch_id naming the hook; a change no event trigger matches
// is dispatched to nothing.
func (e *Engine) FireWatch(ctx context.Context, hook string, ev *Event) (*Run, error) {
	select {
	case <-e.stopping:
		return nil, ErrStopped
	default:
	}
	if ev.ID == "" {
		ev.ID = NewID()
	}
	if ev.Time.IsZero() {
		ev.Time = e.cfg.Clock.Now()
	}
	if ev.Source == "" {
		ev.Source = "watch:" + hook
	}
	var (
		run *Run
		err error
	)
	if derr := e.do(ctx, func(s *state) {
		ent := s.hooks[hook]
		switch {
		case ent == nil:
			err = s.noHook(hook)
			return
		case s.stopping():
			err = ErrStopped
			return
		case !s.schedules():
			err = e.notScheduler() // the scheduler's own watch fires it
			return
		}
		e.logEvent(ev)
		e.notify(ev)
		res := s.trigger(ent, trig{reason: "watch", data: ev.Data, eventType: ev.Type, merge: ev.Merge})
		cp := *res.run
		run, err = &cp, res.err
		s.dispatch(ev, false, nil, nil)
	}); derr != nil {
		return nil, derr
	}
	return run, err
}
