package triggers

import (
	"fmt"
	"path"
	"strings"
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
	include []glob
	ignore  []glob
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
		g, err := parseGlob(p)
		if err != nil {
			return nil, fmt.Errorf("include %q: %w", p, err)
		}
		f.include = append(f.include, g)
	}
	for _, p := range append(append([]string(nil), defaultIgnore...), ignore...) {
		g, err := parseGlob(p)
		if err != nil {
			return nil, fmt.Errorf("ignore %q: %w", p, err)
		}
		f.ignore = append(f.ignore, g)
	}
	return f, nil
}

// ValidateGlob reports whether p is a valid include or ignore pattern.
func ValidateGlob(p string) error {
	_, err := parseGlob(p)
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
	comps := strings.Split(rel, "/") // once for every pattern
	if !f.hidden && isHidden(comps) {
		return false
	}
	for _, g := range f.ignore {
		if g.match(comps, false) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, g := range f.include {
		if g.match(comps, false) {
			return true
		}
	}
	return false
}

// dir reports whether a folder at rel is descended into (it is not
// ignored). Include patterns and extensions apply to files only.
func (f *pathFilter) dir(rel string) bool {
	comps := strings.Split(rel, "/")
	if !f.hidden && isHidden(comps) {
		return false
	}
	for _, g := range f.ignore {
		if g.match(comps, true) {
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

// glob is one gitignore-style pattern:
//
//   - a pattern without a slash (other than a trailing one) matches a
//     name at any depth: "*.tmp", "node_modules";
//   - a pattern with a slash is anchored at the watched folder
//     ("docs/*.md", "/build"); "**" as a whole segment matches any number
//     of folders ("**/testdata/**", "src/**/*.go");
//   - a trailing slash matches folders only (".git/");
//   - "*", "?" and "[...]" match within one name, as in path.Match.
//
// A pattern that matches a folder matches everything inside it.
type glob struct {
	segs     []string
	anchored bool
	dirOnly  bool
}

func parseGlob(p string) (glob, error) {
	var g glob
	if strings.TrimSpace(p) == "" {
		return g, fmt.Errorf("empty pattern")
	}
	if strings.HasSuffix(p, "/") {
		g.dirOnly = true
		p = strings.TrimRight(p, "/")
	}
	if strings.HasPrefix(p, "/") {
		g.anchored = true
		p = strings.TrimLeft(p, "/")
	}
	if p == "" {
		return g, fmt.Errorf("pattern names no path")
	}
	if strings.Contains(p, "/") {
		g.anchored = true
	}
	g.segs = strings.Split(p, "/")
	for _, s := range g.segs {
		if s == "" {
			return g, fmt.Errorf("empty path segment")
		}
		if s == "**" {
			continue
		}
		if _, err := path.Match(s, ""); err != nil {
			return g, fmt.Errorf("bad pattern segment %q: %w", s, err)
		}
	}
	return g, nil
}

// match reports whether the path made of comps (a folder when dir is
// set), or one of the folders it is in, matches g.
func (g glob) match(comps []string, dir bool) bool {
	if !g.anchored {
		for i, c := range comps {
			if g.dirOnly && i == len(comps)-1 && !dir {
				continue
			}
			if ok, _ := path.Match(g.segs[0], c); ok {
				return true
			}
		}
		return false
	}
	for k := 1; k <= len(comps); k++ {
		if g.dirOnly && k == len(comps) && !dir {
			continue
		}
		if matchSegs(g.segs, comps[:k]) {
			return true
		}
	}
	return false
}

// matchSegs matches pattern segments against path components; "**"
// matches zero or more components.
func matchSegs(pat, comps []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			for i := 0; i <= len(comps); i++ {
				if matchSegs(rest, comps[i:]) {
					return true
				}
			}
			return false
		}
		if len(comps) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], comps[0]); !ok {
			return false
		}
		pat, comps = pat[1:], comps[1:]
	}
	return len(comps) == 0
}
