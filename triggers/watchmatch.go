package triggers

import (
	"fmt"
	"path"
	"strings"

	"github.com/hookd/hookd/internal/glob"
)

// defaultIgnore is ignored by every watch in addition to its own ignore
// list: a .git directory at any depth (include_hidden does not bring it
// back).
var defaultIgnore = []string{".git/"}

// pathFilter decides which paths under a watched folder count: the
// extensions, include and ignore lists of a watch, and hidden names.
// Paths are given relative to the watched folder, with forward slashes.
type pathFilter struct {
	exts    []string // lower case, with the dot
	include []*glob.PathPattern
	ignore  []*glob.PathPattern
	hidden  bool // report hidden files and folders (include_hidden)
}

// newPathFilter compiles a watch's filters; hidden says whether hidden
// files and folders (a name starting with ".") are reported.
func newPathFilter(exts, include, ignore []string, hidden bool) (*pathFilter, error) {
	f := &pathFilter{hidden: hidden}
	for _, e := range exts {
		f.exts = append(f.exts, strings.ToLower(e))
	}
	for _, p := range include {
		g, err := glob.CompilePath(p)
		if err != nil {
			return nil, fmt.Errorf("include %q: %w", p, err)
		}
		f.include = append(f.include, g)
	}
	for _, p := range append(append([]string(nil), defaultIgnore...), ignore...) {
		g, err := glob.CompilePath(p)
		if err != nil {
			return nil, fmt.Errorf("ignore %q: %w", p, err)
		}
		f.ignore = append(f.ignore, g)
	}
	return f, nil
}

// ValidateGlob reports whether p is a valid include or ignore pattern
// (glob.CompilePath).
func ValidateGlob(p string) error {
	_, err := glob.CompilePath(p)
	return err
}

// file reports whether a file at rel is reported.
func (f *pathFilter) file(rel string) bool {
	if len(f.exts) > 0 {
		base := strings.ToLower(path.Base(rel))
		ok := false
		for _, e := range f.exts {
			if strings.HasSuffix(base, e) && len(base) > len(e) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if !f.hidden && isHidden(strings.Split(rel, "/")) {
		return false
	}
	for _, g := range f.ignore {
		if g.Match(rel, false) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, g := range f.include {
		if g.Match(rel, false) {
			return true
		}
	}
	return false
}

// dir reports whether a folder at rel is descended into (it is not
// ignored). Include patterns and extensions apply to files only.
func (f *pathFilter) dir(rel string) bool {
	if !f.hidden && isHidden(strings.Split(rel, "/")) {
		return false
	}
	for _, g := range f.ignore {
		if g.Match(rel, true) {
			return false
		}
	}
	return true
}

// isHidden reports whether a path (its components below the watched
// folder) is or is inside a hidden file or folder.
func isHidden(comps []string) bool {
	for _, c := range comps {
		if len(c) > 1 && c[0] == '.' && c != ".." {
			return true
		}
	}
	return false
}
