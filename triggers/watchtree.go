package triggers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/fsnotify/fsnotify"
	"github.com/hookd/hookd/engine"
)

// watch is one hook's file watch (or one of the daemon's own, such as its
// hooks directory).
type watch struct {
	key     string
	name    string
	hook    *engine.Hook     // nil for the daemon's own watches
	fn      func([]Change)   // the daemon's own watches
	spec    engine.WatchSpec //
	workdir string           // relative_path is relative to it
	filter  *pathFilter
	roots   []*root
	win     *window // changes inside the quiet period, or nil
	poll    *poller // set while the watch polls
}

// root is one path a watch names.
type root struct {
	w      *watch
	path   string
	tree   bool                // path is a folder, watched as a tree
	folder bool                // path was a folder: its watch fires folder.changed even once it is gone
	nodes  map[string]*dirNode // folders owned as part of the tree
	// anchor is the folder watched for path itself to appear, change or
	// go: its parent, or its nearest existing ancestor while it is
	// missing. Set when tree is false.
	anchor *dirNode
}

// dirNode is one folder watched with inotify, with the snapshot of what
// it holds.
type dirNode struct {
	path    string
	entries map[string]fileState // by name
	owners  []*root              // trees it is part of
	exact   []*root              // roots anchored here
	watched bool                 // the inotify watch is in place
}

func (n *dirNode) unused() bool { return len(n.owners) == 0 && len(n.exact) == 0 }

// fileState is what the watcher knows of a path.
type fileState struct {
	exists bool
	dir    bool
	size   int64
	mtime  int64 // unix nanoseconds
}

func (s fileState) file() bool { return s.exists && !s.dir }

func stateOf(fi fs.FileInfo) fileState {
	if fi.IsDir() {
		return fileState{exists: true, dir: true}
	}
	return fileState{exists: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// lstat returns the state of p now. Symbolic links are not followed.
func lstat(p string) fileState {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileState{}
	}
	return stateOf(fi)
}

// isDir reports whether p is a folder, or a symbolic link to one: a path
// a watch names is followed, what is found inside it is not.
func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func newWatch(key, name string, spec engine.WatchSpec, workdir string) (*watch, error) {
	f, err := newPathFilter(spec.Extensions, spec.Include, spec.Ignore, spec.IncludeHidden)
	if err != nil {
		return nil, err
	}
	if len(spec.Paths) == 0 {
		return nil, errors.New("no paths to watch")
	}
	wt := &watch{key: key, name: name, spec: spec, workdir: workdir, filter: f}
	seen := map[string]bool{}
	for _, p := range spec.Paths {
		p = filepath.Clean(p)
		if !filepath.IsAbs(p) {
			abs, err := filepath.Abs(p)
			if err != nil {
				return nil, fmt.Errorf("resolve %s: %w", p, err)
			}
			p = abs
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		wt.roots = append(wt.roots, &root{w: wt, path: p})
	}
	return wt, nil
}

// rel returns p relative to the root, with forward slashes.
func (r *root) rel(p string) string {
	rel, err := filepath.Rel(r.path, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}

// wantsDir reports whether the folder d belongs to r's tree.
func (r *root) wantsDir(d string) bool {
	if d == r.path {
		return true
	}
	if !r.w.spec.Recursive || !within(d, r.path) {
		return false
	}
	return r.w.filter.dir(r.rel(d))
}

// matchesFile reports whether a file at p, in a folder r's tree owns, is
// reported by r's watch.
func (r *root) matchesFile(p string) bool {
	if !r.w.spec.Recursive && filepath.Dir(p) != r.path {
		return false
	}
	return r.w.filter.file(r.rel(p))
}

// within reports whether p is strictly inside dir.
func within(p, dir string) bool {
	if dir == "/" {
		return p != "/" && strings.HasPrefix(p, "/")
	}
	return len(p) > len(dir) && strings.HasPrefix(p, dir) && p[len(dir)] == filepath.Separator
}

// excluded reports whether p is one of hookd's own files.
func (w *Watcher) excluded(p string) bool {
	for _, x := range w.opts.Exclude {
		if strings.HasPrefix(p, x) {
			return true
		}
	}
	return false
}

// setup starts watching wt. first says whether this is the first setup of
// the watch in this process (scan_on_start compares with the snapshot
// then).
func (w *Watcher) setup(wt *watch, first bool) {
	if wt.spec.Poll || w.fsn == nil {
		w.startPolling(wt, first)
		return
	}
	for _, r := range wt.roots {
		w.resolve(r, false)
		if w.degrade[wt] != nil {
			break
		}
	}
	if err := w.degrade[wt]; err != nil {
		delete(w.degrade, wt)
		w.log.Error(fmt.Sprintf("file watch of %s: cannot watch with inotify%s", wt.name, limitHint(err)),
			"err", err, "poll_interval", w.opts.PollInterval)
		w.teardown(wt)
		w.startPolling(wt, first)
		return
	}
	n := 0
	for _, r := range wt.roots {
		n += len(r.nodes)
	}
	w.log.Info("file watch: watching", "watch", wt.name, "paths", len(wt.roots), "folders", n)
	if first {
		w.scanOnStart(wt, w.treeFiles(wt))
	}
}

// teardown stops watching wt's roots (a polling watch stops polling).
func (w *Watcher) teardown(wt *watch) {
	w.stopPoll(wt)
	for _, r := range wt.roots {
		w.detach(r)
	}
}

// detach removes r from every folder it owns or is anchored at, and stops
// watching the folders nobody needs any more.
func (w *Watcher) detach(r *root) {
	for _, n := range r.nodes {
		n.owners = slices.DeleteFunc(n.owners, func(x *root) bool { return x == r })
		w.release(n)
	}
	r.nodes = nil
	if n := r.anchor; n != nil {
		n.exact = slices.DeleteFunc(n.exact, func(x *root) bool { return x == r })
		w.release(n)
		r.anchor = nil
	}
	r.tree = false
}

// release stops watching n if nothing needs it.
func (w *Watcher) release(n *dirNode) {
	if !n.unused() || w.dirs[n.path] != n {
		return
	}
	delete(w.dirs, n.path)
	if n.watched && w.fsn != nil {
		if err := w.fsn.Remove(n.path); err != nil && !errors.Is(err, fsnotify.ErrNonExistentWatch) {
			w.log.Debug("file watch: remove watch", "dir", n.path, "err", err)
		}
	}
}

// node returns the watched folder d, watching it first if needed. It
// returns nil when d cannot be watched; a limit error queues the owners'
// watches for polling.
func (w *Watcher) node(d string, owners ...*root) *dirNode {
	if n := w.dirs[d]; n != nil {
		return n
	}
	if err := w.addWatch(d); err != nil {
		if isLimit(err) {
			for _, r := range owners {
				if w.degrade[r.w] == nil {
					w.degrade[r.w] = err
				}
			}
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			w.log.Warn("file watch: cannot watch folder", "dir", d, "err", err)
		}
		return nil
	}
	n := &dirNode{path: d, entries: map[string]fileState{}, watched: true}
	w.dirs[d] = n
	if ents, err := os.ReadDir(d); err == nil {
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				n.entries[e.Name()] = stateOf(fi)
			}
		}
	}
	return n
}

// resolve (re)attaches r to the file system as it is now: a folder is
// watched as a tree; a file, or a path that does not exist yet, is
// watched from its parent (or nearest existing ancestor). fresh says that
// what is found is new: its files are reported created.
func (w *Watcher) resolve(r *root, fresh bool) {
	w.detach(r)
	st := lstat(r.path)
	if st.dir || isDir(r.path) {
		r.tree, r.folder = true, true
		r.nodes = map[string]*dirNode{}
		w.addTree(r.path, []*root{r}, fresh, "")
		return
	}
	a := filepath.Dir(r.path)
	for a != filepath.Dir(a) && !isDir(a) {
		a = filepath.Dir(a)
	}
	n := w.node(a, r)
	if n == nil {
		return
	}
	n.exact = append(n.exact, r)
	r.anchor = n
	if fresh && st.exists && a == filepath.Dir(r.path) {
		w.touch(r.w, r.path, fileState{}, true, false)
	}
}

// addTree watches the folder top and, for the roots that want them, the
// folders below it, adding the roots as owners. When fresh, the files
// found are reported created to the watches that match them; from, when
// set, is the folder top was renamed from, so each file pairs with its
// old name.
func (w *Watcher) addTree(top string, owners []*root, fresh bool, from string) {
	type item struct {
		dir    string
		owners []*root
	}
	stack := []item{{top, owners}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := w.node(it.dir, it.owners...)
		if n == nil {
			continue
		}
		for _, r := range it.owners {
			if !slices.Contains(n.owners, r) {
				n.owners = append(n.owners, r)
			}
			if r.nodes == nil {
				r.nodes = map[string]*dirNode{}
			}
			r.nodes[it.dir] = n
		}
		for name, st := range n.entries {
			p := filepath.Join(it.dir, name)
			if w.excluded(p) {
				continue
			}
			if st.dir {
				var sub []*root
				for _, r := range it.owners {
					if r.wantsDir(p) {
						sub = append(sub, r)
					}
				}
				if len(sub) > 0 {
					stack = append(stack, item{p, sub})
				}
				continue
			}
			if !fresh {
				continue
			}
			for _, r := range it.owners {
				if r.matchesFile(p) {
					w.touch(r.w, p, fileState{}, true, false)
					if from != "" {
						old := filepath.Join(from, relTo(top, p))
						if r.w.win != nil && r.w.win.entries[old] != nil {
							r.w.win.pairs[p] = old
						}
					}
				}
			}
		}
	}
}

// relTo returns p relative to top, in the OS's form.
func relTo(top, p string) string {
	rel, err := filepath.Rel(top, p)
	if err != nil {
		return filepath.Base(p)
	}
	return rel
}

// treeFiles returns the files wt reports, as its folders hold them now.
func (w *Watcher) treeFiles(wt *watch) map[string]fileState {
	files := map[string]fileState{}
	for _, r := range wt.roots {
		if !r.tree {
			if st := lstat(r.path); st.file() {
				files[r.path] = st
			}
			continue
		}
		for d, n := range r.nodes {
			for name, st := range n.entries {
				p := filepath.Join(d, name)
				if st.file() && !w.excluded(p) && r.matchesFile(p) {
					files[p] = st
				}
			}
		}
	}
	return files
}

// handle processes one fsnotify event.
func (w *Watcher) handle(ev fsnotify.Event) {
	p := filepath.Clean(ev.Name)
	from := w.lastRename
	w.lastRename = nil
	if w.excluded(p) {
		return
	}
	parent := w.dirs[filepath.Dir(p)]
	self := w.dirs[p]
	if parent == nil && self == nil {
		return
	}
	name := filepath.Base(p)
	var base fileState
	if parent != nil {
		base = parent.entries[name]
	} else {
		base = fileState{exists: true, dir: true}
	}
	cur := lstat(p)
	if parent != nil {
		if cur.exists {
			parent.entries[name] = cur
		} else {
			delete(parent.entries, name)
		}
	}
	if ev.Has(fsnotify.Rename) && !ev.Has(fsnotify.Create) {
		w.lastRename = &renameFrom{path: p, base: base}
	}
	paired := ""
	if from != nil && ev.Has(fsnotify.Create) && from.path != p {
		paired = from.path
	}
	written := ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write)

	gone := false
	if self != nil && (!cur.dir || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) {
		w.dirGone(self)
		gone = true
	}
	if parent == nil {
		return
	}
	if cur.dir && (!base.dir || gone) {
		// A folder appeared: the trees that want it grow.
		var sub []*root
		for _, r := range parent.owners {
			if r.wantsDir(p) {
				sub = append(sub, r)
			}
		}
		if len(sub) > 0 {
			w.addTree(p, sub, true, paired)
		}
	}
	if base.file() || cur.file() {
		fb := base
		if fb.dir {
			fb = fileState{} // a folder replaced by a file: the file is new
		}
		if paired != "" && cur.file() {
			w.pairFile(from, p, fb, written)
		} else {
			for _, wt := range w.matching(p) {
				w.touch(wt, p, fb, written, false)
			}
		}
	}
	// Roots anchored here: the path itself, or a folder on the way to it.
	for _, r := range slices.Clone(parent.exact) {
		switch {
		case p == r.path && !isDir(p):
			// A file root: already reported through matching.
		case p == r.path || within(r.path, p):
			w.queueResolve(r)
		}
	}
}

// renameFrom is a rename's old name, waiting for the new one: fsnotify
// reports a rename as Rename of the old path immediately followed by
// Create of the new one.
type renameFrom struct {
	path string
	base fileState
}

func (w *Watcher) queueResolve(r *root) {
	if !slices.Contains(w.resolveQ, r) {
		w.resolveQ = append(w.resolveQ, r)
	}
}

// matching returns the watches that report a file at p.
func (w *Watcher) matching(p string) []*watch {
	parent := w.dirs[filepath.Dir(p)]
	if parent == nil {
		return nil
	}
	var out []*watch
	add := func(wt *watch) {
		if !slices.Contains(out, wt) {
			out = append(out, wt)
		}
	}
	for _, r := range parent.owners {
		if r.matchesFile(p) {
			add(r.w)
		}
	}
	for _, r := range parent.exact {
		if r.path == p {
			add(r.w)
		}
	}
	return out
}

// pairFile reports a file renamed from from.path to p to the watches of
// either name; base is the state p had before.
func (w *Watcher) pairFile(from *renameFrom, p string, base fileState, written bool) {
	toW := w.matching(p)
	fromW := w.matching(from.path)
	for _, wt := range toW {
		w.touch(wt, p, base, written, false)
	}
	for _, wt := range fromW {
		if !slices.Contains(toW, wt) {
			w.touch(wt, p, base, written, true)
		}
	}
	for _, wt := range append(toW, fromW...) {
		if wt.win == nil {
			continue
		}
		if wt.win.entries[from.path] == nil {
			wt.win.add(from.path, from.base, false, true, w.now())
		}
		wt.win.pairs[p] = from.path
	}
}

// dirGone handles a watched folder that was deleted or moved away: the
// files it and its subfolders held are reported deleted, their watches
// are dropped, and the roots that lived there look for their path again.
func (w *Watcher) dirGone(n *dirNode) {
	var nodes []*dirNode
	stack := []*dirNode{n}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nodes = append(nodes, x)
		for name, st := range x.entries {
			if st.dir {
				if c := w.dirs[filepath.Join(x.path, name)]; c != nil && c != n {
					stack = append(stack, c)
				}
			}
		}
	}
	for _, x := range nodes {
		for name, st := range x.entries {
			if st.dir {
				continue
			}
			p := filepath.Join(x.path, name)
			if w.excluded(p) {
				continue
			}
			for _, wt := range w.matching(p) {
				w.touch(wt, p, st, false, false)
			}
		}
	}
	for _, x := range nodes {
		for _, r := range x.owners {
			if r.path == x.path {
				w.queueResolve(r)
			}
			delete(r.nodes, x.path)
		}
		for _, r := range x.exact {
			w.queueResolve(r)
		}
		x.owners, x.exact = nil, nil
		x.entries = map[string]fileState{}
		w.release(x)
	}
}

// isLimit reports whether err is inotify's watch or instance limit.
func isLimit(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE)
}

// limitHint names the sysctl to raise when err is one of inotify's limits.
func limitHint(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Sprintf(": the inotify watch limit is reached (fs.inotify.max_user_watches = %s); "+
			"raise it, e.g. `sysctl -w fs.inotify.max_user_watches=524288`; polling instead", readSysctl("max_user_watches"))
	case errors.Is(err, syscall.EMFILE):
		return fmt.Sprintf(": the inotify instance limit is reached (fs.inotify.max_user_instances = %s); "+
			"raise it, e.g. `sysctl -w fs.inotify.max_user_instances=1024`; polling instead", readSysctl("max_user_instances"))
	}
	return "; polling instead"
}

func readSysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/fs/inotify/" + name)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
