package triggers

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hookd/hookd/engine"
)

// poller is the state of a watch that polls: the files it reported, as
// the last scan found them.
type poller struct {
	files map[string]fileState
}

// startPolling makes wt poll every PollInterval instead of using inotify.
func (w *Watcher) startPolling(wt *watch, first bool) {
	wt.poll = &poller{files: w.scanFiles(wt)}
	w.polling[wt] = true
	if w.pollTicker == nil {
		w.pollTicker = time.NewTicker(w.opts.PollInterval)
	}
	w.log.Info("file watch: polling", "watch", wt.name, "paths", len(wt.roots), "files", len(wt.poll.files),
		"interval", w.opts.PollInterval)
	if first {
		w.scanOnStart(wt, wt.poll.files)
	}
}

// stopPoll stops wt's polling, if it polls.
func (w *Watcher) stopPoll(wt *watch) {
	if wt.poll == nil {
		return
	}
	wt.poll = nil
	delete(w.polling, wt)
	if len(w.polling) == 0 && w.pollTicker != nil {
		w.pollTicker.Stop()
		w.pollTicker = nil
	}
}

// stopPolling stops the ticker, when the watcher stops.
func (w *Watcher) stopPolling() {
	if w.pollTicker != nil {
		w.pollTicker.Stop()
		w.pollTicker = nil
	}
	for wt := range w.open {
		if wt.win != nil {
			w.log.Info("file watch: stopping before the quiet period ended; changes not fired",
				"watch", wt.name, "paths", len(wt.win.entries))
		}
	}
}

// pollAll scans every polling watch and records what changed.
func (w *Watcher) pollAll() {
	for wt := range w.polling {
		cur := w.scanFiles(wt)
		for p, old := range wt.poll.files {
			if st := cur[p]; st != old {
				w.touch(wt, p, old, false, false)
			}
		}
		for p := range cur {
			if _, ok := wt.poll.files[p]; !ok {
				w.touch(wt, p, fileState{}, false, false)
			}
		}
		wt.poll.files = cur
	}
}

// scanFiles walks wt's paths and returns the files it reports.
func (w *Watcher) scanFiles(wt *watch) map[string]fileState {
	files := map[string]fileState{}
	for _, r := range wt.roots {
		st := lstat(r.path)
		if !isDir(r.path) {
			if st.file() {
				files[r.path] = st
			}
			continue
		}
		r.folder = true
		start := r.path
		if !st.dir {
			start += string(filepath.Separator) // a link to a folder: walk the folder
		}
		_ = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // gone or unreadable meanwhile: what is there is scanned
			}
			if p == start {
				return nil
			}
			if w.excluded(p) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if !r.wantsDir(p) {
					return filepath.SkipDir
				}
				return nil
			}
			if !r.matchesFile(p) {
				return nil
			}
			if fi, err := d.Info(); err == nil {
				files[p] = stateOf(fi)
			}
			return nil
		})
	}
	return files
}

// scanOnStart compares the files a watch with scan_on_start has now with
// the snapshot stored when hookd last saw them, and records the
// differences in the watch's window; the first time, it stores the
// snapshot.
func (w *Watcher) scanOnStart(wt *watch, current map[string]fileState) {
	if !wt.spec.ScanOnStart || wt.hook == nil {
		return
	}
	snaps := w.opts.Snapshots
	if snaps == nil {
		w.log.Warn("file watch: scan_on_start needs a store that keeps snapshots; not scanning", "hook", wt.name)
		return
	}
	stored, ok, err := snaps.LoadSnapshot(context.Background(), wt.name)
	if err != nil {
		w.log.Error("file watch: scan_on_start: load snapshot", "hook", wt.name, "err", err)
		return
	}
	if !ok {
		name, files := wt.name, stampsOf(current)
		w.fires.push(func(ctx context.Context, _ bool) {
			if err := snaps.SaveSnapshot(ctx, name, files); err != nil {
				w.log.Error("file watch: scan_on_start: save snapshot", "hook", name, "err", err)
			}
		})
		w.log.Info("file watch: scan_on_start: first snapshot", "hook", wt.name, "files", len(current))
		return
	}
	n := 0
	for p, fsn := range stored {
		base := fileState{exists: true, size: fsn.Size, mtime: timeNanos(fsn.ModTime)}
		if cur := current[p]; cur != base {
			w.touch(wt, p, base, false, false)
			n++
		}
	}
	for p := range current {
		if _, ok := stored[p]; !ok {
			w.touch(wt, p, fileState{}, false, false)
			n++
		}
	}
	w.log.Info("file watch: scan_on_start: compared with the snapshot", "hook", wt.name, "files", len(current), "changed", n)
}

func stampsOf(files map[string]fileState) map[string]engine.FileStamp {
	out := make(map[string]engine.FileStamp, len(files))
	for p, st := range files {
		out[p] = engine.FileStamp{Size: st.size, ModTime: mtimeOf(st)}
	}
	return out
}

func timeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// rescan compares every watched folder with its snapshot, after inotify
// lost events, and handles each difference as the event that was lost.
// It returns how many paths differed.
func (w *Watcher) rescan() int {
	w.lastRename = nil
	nodes := make([]*dirNode, 0, len(w.dirs))
	for _, n := range w.dirs {
		nodes = append(nodes, n)
	}
	count := 0
	for _, n := range nodes {
		if w.dirs[n.path] != n {
			continue // dropped while rescanning another
		}
		ents, err := os.ReadDir(n.path)
		if err != nil {
			count++
			w.handle(fsnotify.Event{Name: n.path, Op: fsnotify.Remove})
			if w.dirs[n.path] == n {
				w.dirGone(n)
			}
			continue
		}
		now := map[string]fileState{}
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				now[e.Name()] = stateOf(fi)
			}
		}
		var lost []fsnotify.Event
		for name, old := range n.entries {
			st, ok := now[name]
			switch {
			case !ok:
				lost = append(lost, fsnotify.Event{Name: filepath.Join(n.path, name), Op: fsnotify.Remove})
			case st != old:
				op := fsnotify.Write
				if st.dir != old.dir {
					op = fsnotify.Remove // replaced: handled as gone, then found again
				}
				lost = append(lost, fsnotify.Event{Name: filepath.Join(n.path, name), Op: op})
			}
		}
		for name := range now {
			if _, ok := n.entries[name]; !ok {
				lost = append(lost, fsnotify.Event{Name: filepath.Join(n.path, name), Op: fsnotify.Create})
			}
		}
		for _, ev := range lost {
			count++
			w.handle(ev)
		}
	}
	w.settle()
	return count
}
