package engine

import (
	"context"
	"encoding/json"
	"fmt"
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
// and payload. ev is stored in the event log and shown to subscribers (the
// live stream), but it is not dispatched to event triggers: a file change
// fires only the hooks whose watch matched it.
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
			err = fmt.Errorf("%w: no hook named %q", ErrNotFound, hook)
			return
		case s.stopping():
			err = ErrStopped
			return
		}
		e.logEvent(ev)
		e.notify(ev)
		res := s.trigger(ent, trig{reason: "watch", data: ev.Data, eventType: ev.Type})
		cp := *res.run
		run, err = &cp, res.err
	}); derr != nil {
		return nil, derr
	}
	return run, err
}

// mergeWatch merges the payload of a later watch trigger into the one of
// a pending run, so that a run queued behind another (overlap: queue)
// sees every change: the change lists are combined per path with the
// rules of the watch window (created then modified is created, created
// then deleted is nothing, modified then deleted is deleted, deleted then
// created is modified), and the other fields are the later trigger's.
func mergeWatch(old json.RawMessage, data map[string]any) json.RawMessage {
	var prev map[string]any
	if len(old) == 0 || json.Unmarshal(old, &prev) != nil {
		return mergeEvent(old, data)
	}
	oldChanges, ok1 := prev["changes"].([]any)
	newChanges, ok2 := data["changes"].([]any)
	if !ok2 {
		if cs, ok := data["changes"].([]map[string]any); ok {
			newChanges, ok2 = make([]any, len(cs)), true
			for i, c := range cs {
				newChanges[i] = c
			}
		}
	}
	if !ok1 || !ok2 {
		return mergeEvent(old, data)
	}
	merged := mergeChanges(oldChanges, newChanges)
	out := make(map[string]any, len(data))
	for k, v := range data {
		out[k] = v
	}
	out["changes"] = merged
	out["count"] = len(merged)
	b, err := json.Marshal(out)
	if err != nil {
		return old
	}
	return b
}

// mergeChanges combines two change lists, keeping the order in which
// paths first appear.
func mergeChanges(a, b []any) []any {
	var order []string
	byPath := map[string]map[string]any{}
	put := func(c map[string]any) {
		p, _ := c["path"].(string)
		if _, ok := byPath[p]; !ok {
			order = append(order, p)
		}
		byPath[p] = c
	}
	drop := func(p string) { delete(byPath, p) }
	for _, x := range a {
		if c, ok := x.(map[string]any); ok {
			put(c)
		}
	}
	for _, x := range b {
		c, ok := x.(map[string]any)
		if !ok {
			continue
		}
		p, _ := c["path"].(string)
		op, _ := c["operation"].(string)
		prev := byPath[p]
		prevOp, _ := prev["operation"].(string)
		switch op {
		case OpModified:
			if prevOp == OpCreated || prevOp == OpRenamed {
				continue // still created (or renamed), now with new content
			}
		case OpDeleted:
			switch prevOp {
			case OpCreated:
				drop(p)
				continue
			case OpRenamed:
				// It came from old_path and is gone now: old_path was deleted.
				drop(p)
				from, _ := prev["old_path"].(string)
				d := map[string]any{"path": from, "operation": OpDeleted}
				if rel, ok := prev["old_relative_path"]; ok {
					d["relative_path"] = rel
				}
				put(d)
				continue
			}
		case OpCreated:
			if prevOp == OpDeleted || prevOp == OpModified {
				c = withOp(c, OpModified)
			}
		case OpRenamed:
			from, _ := c["old_path"].(string)
			if fp := byPath[from]; fp != nil {
				switch fp["operation"] {
				case OpCreated:
					drop(from)
					c = withOp(c, OpCreated)
					delete(c, "old_path")
					delete(c, "old_relative_path")
				case OpRenamed:
					drop(from)
					c = withOp(c, OpRenamed)
					c["old_path"] = fp["old_path"]
				default:
					drop(from)
				}
			}
		}
		put(c)
	}
	out := make([]any, 0, len(byPath))
	for _, p := range order {
		if c, ok := byPath[p]; ok {
			out = append(out, c)
			delete(byPath, p) // a path re-put after a drop is listed once
		}
	}
	return out
}

func withOp(c map[string]any, op string) map[string]any {
	out := make(map[string]any, len(c))
	for k, v := range c {
		out[k] = v
	}
	out["operation"] = op
	return out
}
