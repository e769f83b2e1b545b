package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
	if opts.Root == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, nil, []error{&Error{File: dir, Msg: err.Error(), Err: err}}
		}
		opts.Root = filepath.Dir(abs)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, []error{&Error{File: dir, Msg: fmt.Sprintf("read hooks directory: %s", err), Err: err}}
	}
	if !opts.AllowInsecure {
		fi, err := os.Stat(dir)
		if err == nil {
			err = checkOwnership(dir, fi)
		}
		if err != nil {
			return nil, nil, []error{&Error{File: dir, Msg: err.Error(), Err: err}}
		}
	}
	type seen struct {
		file string
		line int
	}
	byName := map[string]seen{}
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if strings.HasPrefix(name, ".") || !slices.Contains(hookExts, ext) || e.IsDir() {
			continue
		}
		file := filepath.Join(dir, name)
		fi, err := os.Stat(file) // a symlink is followed
		if err != nil || !fi.Mode().IsRegular() {
			continue // not a hook file
		}
		if !opts.AllowInsecure {
			if err := checkOwnership(file, fi); err != nil {
				errs = append(errs, &Error{File: file, Msg: err.Error(), Err: err})
				continue
			}
		}
		data, err := os.ReadFile(file)
		if err == nil && len(data) > maxFileSize {
			err = fmt.Errorf("file is larger than %d MiB", maxFileSize>>20)
		}
		if err != nil {
			errs = append(errs, &Error{File: file, Msg: fmt.Sprintf("read: %s", err), Err: err})
			continue
		}
		o := opts
		o.DefaultName = strings.TrimSuffix(name, ext)
		if isHandlerDoc(data, file) {
			s := newState(file)
			if top := s.parseDoc(data, false); top != nil {
				hd := s.handler(top, o)
				if l := s.result(); len(l) > 0 {
					for _, e := range l {
						errs = append(errs, e)
					}
				} else {
					handlers = append(handlers, hd)
				}
			}
			continue
		}
		h, line, l := parseHook(data, file, o)
		if len(l) == 0 {
			if first, dup := byName[h.Name]; dup {
				l = Errors{{File: file, Line: line, Field: "name",
					Msg: fmt.Sprintf("duplicate hook name %q (first in %s:%d)", h.Name, first.file, first.line)}}
			} else {
				byName[h.Name] = seen{file, line}
			}
		}
		if len(l) > 0 {
			for _, e := range l {
				errs = append(errs, e)
			}
			continue
		}
		hooks = append(hooks, h)
	}
	return hooks, handlers, errs
}
