package triggers

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hookd/hookd/engine"
)

// A window that closes while a run of its hook is pending (overlap:
// queue) joins that run: the engine calls the event's Merge with the
// pending run's payload, and the change lists are combined here, by the
// rules of one window (coalesce), not again by the engine.

// mergeInto returns the Merge of an event that carries changes (later):
// it combines them with the changes in a pending run's payload, and
// builds the payload the merged list makes, as watchEvent does. Keys of
// the pending payload that the watch does not set are kept.
func mergeInto(hook string, later []Change, fileWatch bool, workdir, base string, laterData map[string]any) func(json.RawMessage) (map[string]any, error) {
	return func(pending json.RawMessage) (map[string]any, error) {
		out := map[string]any{}
		var prev struct {
			Changes []struct {
				Path       string `json:"path"`
				OldPath    string `json:"old_path"`
				AbsPath    string `json:"absolute_path"` // path is relative to the folder in folder.changed
				OldAbsPath string `json:"old_absolute_path"`
				Op         string `json:"operation"`
			} `json:"changes"`
		}
		if len(pending) > 0 {
			if err := json.Unmarshal(pending, &out); err != nil {
				return nil, fmt.Errorf("decode the pending payload: %w", err)
			}
			if err := json.Unmarshal(pending, &prev); err != nil {
				return nil, fmt.Errorf("decode the pending changes: %w", err)
			}
		}
		earlier := make([]Change, 0, len(prev.Changes))
		for _, c := range prev.Changes {
			p, o := c.Path, c.OldPath
			if c.AbsPath != "" {
				p = c.AbsPath
			}
			if c.OldAbsPath != "" {
				o = c.OldAbsPath
			}
			earlier = append(earlier, Change{Path: p, OldPath: o, Op: c.Op})
		}
		merged := coalesce(earlier, later)
		if len(merged) == 0 {
			maps.Copy(out, laterData)
			out["changes"], out["count"], out["paths"] = []any{}, 0, ""
			return out, nil
		}
		maps.Copy(out, watchEvent(hook, merged, fileWatch, workdir, base).Data)
		return out, nil
	}
}

// coalesce combines the changes of an earlier window with those of a
// later one by the rules of one window (changesOf): each path is compared
// as it was before the earlier change with what it is after the later
// one. So created then modified is created, created then deleted is
// nothing, modified then deleted is deleted, deleted then created is
// modified, and a rename pairs its two names.
func coalesce(earlier, later []Change) []Change {
	win := newWindow(time.Time{})
	final := map[string]fileState{}
	present := fileState{exists: true}
	add := func(p string, base, now fileState) {
		win.add(p, base, true, false, time.Time{})
		final[p] = now
	}
	later = slices.Clone(later)
	slices.SortStableFunc(later, func(a, b Change) int { return a.seq - b.seq }) // in the order they happened
	for _, c := range slices.Concat(earlier, later) {
		now := fileState{exists: true, size: c.Size}
		if !c.ModTime.IsZero() {
			now.mtime = c.ModTime.UnixNano()
		}
		switch c.Op {
		case engine.OpCreated:
			add(c.Path, fileState{}, now)
		case engine.OpModified:
			add(c.Path, present, now)
		case engine.OpDeleted:
			add(c.Path, present, fileState{})
		case engine.OpRenamed:
			add(c.OldPath, present, fileState{})
			add(c.Path, fileState{}, now)
			win.pairs[c.Path] = c.OldPath
		}
	}
	return changesOf(win, func(p string) fileState { return final[p] })
}
