package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hookd/hookd/engine"
)

// hookExts are the extensions of hook files, YAML or JSON.
var hookExts = []string{".yaml", ".yml", ".json"}

// LoadDir loads every hook file in dir: the files named *.yaml, *.yml or
// *.json directly in it (not in subfolders), in name order, skipping
// hidden files. A file that fails is reported and leaves it out; the
// others still load. A hook whose name an earlier file already took is an
// error on the later file. Each error in errs is an *Error.
//
// A hook's default name is its file name without the extension, and
// opts.Root defaults to the parent of dir: hooks.d lives in the project,
// and a hook's workdir (default: the project root) resolves against it.
//
// The directory, and each file, must not be writable by every user nor
// owned by another user than hookd's and root (as sshd checks its files):
// such a directory loads nothing, such a file is an error, unless
// opts.AllowInsecure is set.
//
// Files with an `on:` key declare command handlers; LoadDir checks them
// and reports their errors but returns only the hooks (see LoadDirAll).
func LoadDir(dir string, opts Options) (hooks []*engine.Hook, errs []error) {
	hooks, _, errs = LoadDirAll(dir, opts)
	return hooks, errs
}

// LoadDirAll is LoadDir that also returns the command handlers declared
// in the directory, in file name order.
func LoadDirAll(dir string, opts Options) (hooks []*engine.Hook, handlers []*Handler, errs []error) {
	l := LoadDirReport(dir, opts)
	return l.Hooks, l.Handlers, l.Errs
}

// DirLoad is what a hooks directory gave (LoadDirReport).
type DirLoad struct {
	Hooks    []*engine.Hook
	Handlers []*Handler
	// Broken are the files that did not load, in name order, each with
	// its errors and the hook it defines: what the engine keeps listing
	// until they load (engine.Engine.SetBroken).
	Broken []engine.BrokenFile
	// Errs are every error, as LoadDirAll returns them: the broken
	// files', and the directory's own (it cannot be read, or another
	// user may write it), when nothing loads and Broken is empty.
	Errs []error
}

// LoadDirReport is LoadDirAll that also says which files did not load,
// as typed values.
func LoadDirReport(dir string, opts Options) DirLoad {
	var l DirLoad
	l.Hooks, _, l.Handlers, l.Broken, l.Errs = loadDir(dir, opts, true)
	return l
}

// CheckDir checks the hook files of dir as LoadDirAll loads them (every
// file, every check, the same errors in the same order, the same
// handlers) but keeps of each hook only its name, returned in file name
// order: what `hookd validate` reports. Each hook is built, checked and
// dropped as its file is done, so the heap stays small while thousands
// of files load and the collector has little to go over.
func CheckDir(dir string, opts Options) (names []string, handlers []*Handler, errs []error) {
	_, names, handlers, _, errs = loadDir(dir, opts, false)
	return names, handlers, errs
}

// loadDir loads or checks the files of dir: it returns the hooks when
// keep is set, else only their names, and the files that did not load.
func loadDir(dir string, opts Options, keep bool) (hooks []*engine.Hook, names []string, handlers []*Handler, broken []engine.BrokenFile, errs []error) {
	if opts.Root == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, nil, nil, nil, []error{&Error{File: dir, Msg: err.Error(), Err: err}}
		}
		opts.Root = filepath.Dir(abs)
	}
	hd, err := openHookDir(dir)
	var entries []os.DirEntry
	if err == nil {
		defer hd.close()
		entries, err = hd.f.ReadDir(-1)
	}
	if err != nil {
		return nil, nil, nil, nil, []error{&Error{File: dir, Msg: fmt.Sprintf("read hooks directory: %s", err), Err: err}}
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if !opts.AllowInsecure {
		fi, err := hd.f.Stat() // the directory read, symbolic links followed
		if err == nil {
			err = checkOwnership(dir, fi)
		}
		if err != nil {
			return nil, nil, nil, nil, []error{&Error{File: dir, Msg: err.Error(), Err: err}}
		}
	}
	opts.broad = new(sync.Map)
	opts.cleanDir = filepath.Clean(dir)
	var files []dirFile
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !slices.Contains(hookExts, filepath.Ext(name)) || e.IsDir() {
			continue
		}
		files = append(files, dirFile{name, e.Type().IsRegular()})
	}
	// The files are read and parsed in parallel, one worker a CPU; the
	// results are then taken in name order, so names, errors and the
	// duplicate check come out as from a serial load.
	results := make([]loaded, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			sc := new(scratch) // the worker's: reused file after file
			for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
				results[i] = loadFile(hd, files[i].name, files[i].regular, opts, sc)
				if r := &results[i]; r.hook != nil {
					r.name, r.file = r.hook.Name, r.hook.Source.File
					if !keep {
						r.hook = nil // checked; what is left is its name
					}
				}
			}
		})
	}
	wg.Wait()

	type seen struct {
		file string
		line int
	}
	byName := map[string]seen{}
	// A handler's label is its id at its point (as the Standard Agents
	// spec's unique ids): logs, records and cancel reasons name it, so
	// two handlers of one point may not share it.
	type pointLabel struct {
		point engine.Point
		label string
	}
	byLabel := map[pointLabel]seen{}
	for _, r := range results {
		switch {
		case len(r.errs) > 0:
			errs = append(errs, r.errs...)
			broken = append(broken, brokenFile(r.file, r.name, r.errs...))
		case r.handler != nil:
			h := r.handler
			k := pointLabel{h.On, h.Label}
			if first, dup := byLabel[k]; dup {
				err := &Error{File: h.File, Line: h.LabelLine, Field: "label",
					Msg: fmt.Sprintf("duplicate handler label %q at %s (first in %s:%d); a label is the handler's id at its point: set label: to tell them apart",
						h.Label, h.On, first.file, first.line)}
				errs = append(errs, err)
				broken = append(broken, brokenFile(h.File, r.name, err))
				continue
			}
			byLabel[k] = seen{h.File, h.LabelLine}
			handlers = append(handlers, h)
		case r.file != "": // a hook
			if first, dup := byName[r.name]; dup {
				err := &Error{File: r.file, Line: r.line, Field: "name",
					Msg: fmt.Sprintf("duplicate hook name %q (first in %s:%d)", r.name, first.file, first.line)}
				errs = append(errs, err)
				broken = append(broken, brokenFile(r.file, r.name, err))
				continue
			}
			byName[r.name] = seen{r.file, r.line}
			if keep {
				hooks = append(hooks, r.hook)
			} else {
				names = append(names, r.name)
			}
		}
	}
	return hooks, names, handlers, broken, errs
}

// brokenFile is the file of a hooks directory that did not load, for the
// engine: the hook it defines is name, its errors errs.
func brokenFile(file, name string, errs ...error) engine.BrokenFile {
	b := engine.BrokenFile{File: file, Hook: name, Errors: make([]string, len(errs))}
	for i, e := range errs {
		b.Errors[i] = e.Error()
	}
	return b
}

// joinName is filepath.Join(dir, name) for dir already cleaned and a
// name read from it (no separator, not . nor ..), without Join's scan of
// the whole path.
func joinName(dir, name string) string {
	switch dir {
	case ".":
		return name
	case string(filepath.Separator):
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}

// dirFile is a hook file named in a hooks directory, and whether its
// entry is a regular file (not a symbolic link nor anything else).
type dirFile struct {
	name    string
	regular bool
}

// loaded is what one file of a hooks directory gave: a hook (with its
// name, its file and the line that names it; only these when the hook
// was checked, not kept), a handler, errors (with the file and the name
// of the hook it defines: its name: when that was read, else the file's
// name), or nothing (not a hook file).
type loaded struct {
	hook       *engine.Hook
	name, file string
	line       int
	handler    *Handler
	errs       []error
}

// fileBufs holds buffers for the files being loaded: nothing loaded keeps
// a file's bytes (the parser copies what it keeps), so one buffer a
// worker serves every file.
var fileBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuf is the largest buffer kept for the next file: a rare big
// file's buffer is left to the collector.
const maxPooledBuf = 64 << 10

// afterStat is called between a hook file's first stat and its open: a
// test replaces the file there.
var afterStat = func(file string) {}

// loadFile checks, reads and parses the file name in dir, once: the
// parsed document says whether it is a handler or a hook. regular says
// that the directory's entry was a regular file when it was read. fast
// memory sc holds for the loader's next file (nil: none kept).
func loadFile(dir *hookDir, name string, regular bool, opts Options, sc *scratch) loaded {
	file := joinName(opts.cleanDir, name)
	base := strings.TrimSuffix(name, filepath.Ext(name))
	// What is not a regular file is skipped without being opened (a
	// FIFO, a device): the entry's type says so, or for a symbolic link
	// a stat, which follows it. The checks are of the open file's own
	// stat, whatever the name is by then.
	if !regular {
		if st, err := dir.stat(name); err != nil || !st.regular { // a symlink is followed
			return loaded{} // not a hook file
		}
	}
	afterStat(file)
	f, st, err := dir.open(name)
	if regular && errors.Is(err, fs.ErrNotExist) {
		return loaded{} // removed since the directory was read, as a failed stat
	}
	if err != nil {
		return loaded{file: file, name: base, errs: []error{&Error{File: file, Msg: fmt.Sprintf("read: %s", err), Err: err}}}
	}
	defer f.close()
	if !st.regular {
		return loaded{} // replaced by something else since its stat
	}
	if !opts.AllowInsecure {
		if err := checkOwner(file, false, st.perm, st.uid); err != nil {
			return loaded{file: file, name: base, errs: []error{&Error{File: file, Msg: err.Error(), Err: err}}}
		}
	}
	buf := fileBufs.Get().(*[]byte)
	data, err := f.read(st.size, *buf)
	if cap(data) <= maxPooledBuf {
		*buf = data[:0]
		defer fileBufs.Put(buf)
	}
	if err == nil && len(data) > maxFileSize {
		err = fmt.Errorf("file is larger than %d MiB", maxFileSize>>20)
	}
	if err != nil {
		return loaded{file: file, name: base, errs: []error{&Error{File: file, Msg: fmt.Sprintf("read: %s", err), Err: err}}}
	}
	opts.DefaultName = base
	s := sc.reset().newState(file)
	top := s.parseDoc(data, false)
	var r loaded
	switch {
	case top == nil:
	case isHandlerDoc(top):
		r.handler = s.handler(top, opts)
	default:
		r.hook, r.line, _ = s.hook(top, data, opts)
	}
	if l := s.result(); len(l) > 0 {
		bad := loaded{file: file, name: base, errs: l.Unwrap()}
		if r.hook != nil && r.hook.Name != "" {
			bad.name = r.hook.Name
		}
		return bad
	}
	if r.handler != nil {
		r.name = base
	}
	return r
}
