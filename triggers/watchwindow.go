package triggers

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
)

// DefaultMaxWaitFactor gives a watch without max_wait one of this many
// quiet periods (5s for the default 500ms), so that a burst that never
// goes quiet still fires.
const DefaultMaxWaitFactor = 10

// window collects one watch's changes until its quiet period passes. It
// keeps, per path, the state the path had when the window first saw it;
// when the window closes, that is compared with the state the path has
// then. So a path is listed once however often it changed, and the rules
// for changes within one window follow: created then modified is
// created, created then deleted is nothing, modified then deleted is
// deleted, deleted then created again is modified.
type window struct {
	first, last time.Time
	entries     map[string]*windowEntry
	pairs       map[string]string // new name -> old name of renames seen
	seq         int
}

type windowEntry struct {
	base    fileState // before the window saw it
	written bool      // written or replaced: modified even if size and mtime are equal
	outside bool      // not matched by the watch; only listed as a rename's other name
	seq     int       // order of the latest change
}

func newWindow(now time.Time) *window {
	return &window{first: now, last: now, entries: map[string]*windowEntry{}, pairs: map[string]string{}}
}

// add records a change of p, whose state before the window was base.
func (win *window) add(p string, base fileState, written, outside bool, now time.Time) {
	win.last = now
	win.seq++
	e := win.entries[p]
	if e == nil {
		win.entries[p] = &windowEntry{base: base, written: written, outside: outside, seq: win.seq}
		return
	}
	e.written = e.written || written
	if !outside {
		e.outside = false
	}
	e.seq = win.seq
}

// deadline is when the window closes: a quiet period after its last
// change, but no later than max_wait after its first.
func (win *window) deadline(spec engine.WatchSpec) time.Time {
	return windowDeadline(win.first, win.last, spec.Debounce, spec.MaxWait)
}

// windowDeadline is when a window whose first and last changes came at
// first and last closes: last+debounce, capped at first+maxWait (maxWait
// 0 means DefaultMaxWaitFactor quiet periods).
func windowDeadline(first, last time.Time, debounce, maxWait time.Duration) time.Time {
	if maxWait <= 0 {
		maxWait = DefaultMaxWaitFactor * debounce
	}
	d := last.Add(debounce)
	if cap := first.Add(maxWait); cap.Before(d) {
		d = cap
	}
	return d
}

// touch records a change of p for wt, opening its window if needed.
func (w *Watcher) touch(wt *watch, p string, base fileState, written, outside bool) {
	now := w.now()
	if wt.win == nil {
		wt.win = newWindow(now)
	}
	w.open[wt] = true
	wt.win.add(p, base, written, outside, now)
}

// opOf decides what happened to a path between base and now.
func opOf(base, now fileState, written bool) string {
	switch {
	case !base.file() && now.file():
		return engine.OpCreated
	case base.file() && !now.file():
		return engine.OpDeleted
	case base.file() && now.file() && (written || base.size != now.size || base.mtime != now.mtime):
		return engine.OpModified
	}
	return ""
}

// changesOf closes a window: the changes it saw, sorted by path, and the
// state each path has now.
func changesOf(win *window, stat func(string) fileState) []Change {
	finals := map[string]fileState{}
	final := func(p string) fileState {
		st, ok := finals[p]
		if !ok {
			st = stat(p)
			finals[p] = st
		}
		return st
	}
	var out []Change
	done := map[string]bool{}
	tos := make([]string, 0, len(win.pairs))
	for to := range win.pairs {
		tos = append(tos, to)
	}
	sort.Strings(tos)
	for _, to := range tos {
		from := win.pairs[to]
		te, fe := win.entries[to], win.entries[from]
		if te == nil || fe == nil || done[to] || done[from] || (te.outside && fe.outside) {
			continue
		}
		tf, ff := final(to), final(from)
		if fe.base.file() && !ff.exists && !te.base.exists && tf.file() {
			out = append(out, Change{Path: to, OldPath: from, Op: engine.OpRenamed, Size: tf.size, ModTime: mtimeOf(tf),
				OldModTime: mtimeOf(fe.base), seq: te.seq})
			done[to], done[from] = true, true
		}
	}
	for p, e := range win.entries {
		if done[p] || e.outside {
			continue
		}
		st := final(p)
		op := opOf(e.base, st, e.written)
		if op == "" {
			continue
		}
		c := Change{Path: p, Op: op, seq: e.seq}
		if e.base.file() {
			c.OldModTime = mtimeOf(e.base)
		}
		if st.file() {
			c.Size, c.ModTime = st.size, mtimeOf(st)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func mtimeOf(st fileState) time.Time {
	if st.mtime == 0 {
		return time.Time{}
	}
	return time.Unix(0, st.mtime).UTC()
}

// flush closes wt's window and hands its changes to the firing goroutine.
func (w *Watcher) flush(wt *watch) {
	win := wt.win
	wt.win = nil
	if win == nil {
		return
	}
	changes := changesOf(win, func(p string) fileState {
		st := lstat(p)
		if n := w.dirs[filepath.Dir(p)]; n != nil {
			if st.exists {
				n.entries[filepath.Base(p)] = st
			} else {
				delete(n.entries, filepath.Base(p))
			}
		}
		if wt.poll != nil {
			if st.file() {
				wt.poll.files[p] = st
			} else {
				delete(wt.poll.files, p)
			}
		}
		return st
	})
	if len(changes) == 0 {
		return
	}
	if wt.fn != nil {
		fn := wt.fn
		w.fires.push(func(_ context.Context, stopping bool) {
			if !stopping {
				fn(changes)
			}
		})
		return
	}
	fileWatch := true
	for _, r := range wt.roots {
		if r.folder {
			fileWatch = false
		}
	}
	roots := make([]string, len(wt.roots))
	for i, r := range wt.roots {
		roots[i] = r.path
	}
	base := commonDir(roots)
	ev := watchEvent(wt.name, changes, fileWatch, wt.workdir, base)
	ev.Merge = mergeInto(wt.name, changes, fileWatch, wt.workdir, base, ev.Data)
	name, scan, target := wt.name, wt.spec.ScanOnStart && w.opts.Snapshots != nil, w.opts.Target
	log := w.log
	w.fires.push(func(ctx context.Context, stopping bool) {
		if stopping {
			log.Info("file watch: stopping; change not fired", "hook", name, "changes", len(changes))
			return
		}
		run, err := target.FireWatch(ctx, name, ev)
		switch {
		case err == nil:
			log.Info("file watch fired", "hook", name, "event", ev.Type, "changes", len(changes), "run", run.ID)
		case errors.Is(err, engine.ErrStopped), errors.Is(err, context.Canceled), errors.Is(err, engine.ErrNotScheduler):
			// A cluster node that does not schedule: the scheduler's watch fires.
			return // not recorded: a scan_on_start snapshot keeps the changes for the next start
		case errors.Is(err, engine.ErrNotFound):
			log.Info("file watch: hook is gone", "hook", name)
			return
		default:
			var gate *engine.GateError
			if !errors.As(err, &gate) {
				log.Error("file watch: fire", "hook", name, "err", err)
				return
			}
			log.Info("file watch fired; the run was refused", "hook", name, "changes", len(changes), "reason", err)
		}
		if scan {
			set, del := snapshotDelta(changes)
			if err := w.opts.Snapshots.UpdateSnapshot(ctx, name, set, del); err != nil {
				log.Error("file watch: update snapshot", "hook", name, "err", err)
			}
		}
	})
}

// snapshotDelta turns changes into the files to record and to forget.
func snapshotDelta(changes []Change) (map[string]engine.FileStamp, []string) {
	set := map[string]engine.FileStamp{}
	var del []string
	for _, c := range changes {
		switch c.Op {
		case engine.OpDeleted:
			del = append(del, c.Path)
		case engine.OpRenamed:
			del = append(del, c.OldPath)
			set[c.Path] = engine.FileStamp{Size: c.Size, ModTime: c.ModTime}
		default:
			set[c.Path] = engine.FileStamp{Size: c.Size, ModTime: c.ModTime}
		}
	}
	return set, del
}

// watchEvent builds the event a window of hook's watch fires. A watch
// whose paths are all files fires file.changed with the latest change's
// fields at the top level; a watch of folders fires folder.changed, with
// the folder (base: the watched folder, or the common parent of the
// watched paths) as path and each change's path relative to it, as
// agent-queue did. Both carry the full list as changes (each with its
// absolute_path, and relative_path to the workdir), its length as count,
// the list's relative paths one a line as paths, and the hook's name as
// watch_id.
func watchEvent(hook string, changes []Change, fileWatch bool, workdir, base string) *engine.Event {
	list := make([]any, len(changes))
	paths := make([]string, len(changes))
	for i, c := range changes {
		m := map[string]any{"path": c.Path, "absolute_path": c.Path, "relative_path": relPath(workdir, c.Path), "operation": c.Op}
		paths[i] = relPath(workdir, c.Path)
		if !fileWatch {
			m["path"] = relPath(base, c.Path)
			paths[i] = m["path"].(string)
		}
		if c.OldPath != "" {
			m["old_path"] = c.OldPath
			m["old_absolute_path"] = c.OldPath
			m["old_relative_path"] = relPath(workdir, c.OldPath)
			if !fileWatch {
				m["old_path"] = relPath(base, c.OldPath)
			}
		}
		list[i] = m
	}
	data := map[string]any{"changes": list, "count": len(changes), "paths": strings.Join(paths, "\n"), "watch_id": hook}
	if !fileWatch {
		data["path"] = base
		return &engine.Event{Type: engine.EventFolderChanged, Data: data}
	}
	c := changes[0]
	for _, x := range changes {
		if x.seq > c.seq {
			c = x
		}
	}
	data["path"] = c.Path
	data["relative_path"] = relPath(workdir, c.Path)
	data["operation"] = c.Op
	data["size"] = c.Size
	if !c.ModTime.IsZero() {
		data["mtime"] = c.ModTime.Format(time.RFC3339Nano)
		data["new_mtime"] = unixSeconds(c.ModTime)
	}
	if !c.OldModTime.IsZero() {
		data["old_mtime"] = unixSeconds(c.OldModTime)
	}
	if c.OldPath != "" {
		data["old_path"] = c.OldPath
	}
	return &engine.Event{Type: engine.EventFileChanged, Data: data}
}

// unixSeconds is t as Unix seconds with a fraction, as agent-queue gave
// modification times (Python's st_mtime).
func unixSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}

// commonDir returns the deepest folder that holds every one of paths
// (absolute, clean): the path itself when there is one.
func commonDir(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	dir := paths[0]
	for _, p := range paths[1:] {
		for dir != p && !strings.HasPrefix(p, dir+string(filepath.Separator)) && !(dir == string(filepath.Separator)) {
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return dir
}

// relPath is p relative to workdir, or p when it is outside it.
func relPath(workdir, p string) string {
	if workdir == "" {
		return p
	}
	if rel, err := filepath.Rel(workdir, p); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return p
}
