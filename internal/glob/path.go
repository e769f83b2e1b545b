package glob

import (
	"errors"
	"fmt"
	"strings"
)

// PathPattern is a pattern of an include or ignore list over paths
// relative to a base folder, slash-separated, with gitignore's rules: a
// pattern without a slash (but for a trailing one) matches a name at any
// depth ("*.tmp", "node_modules"); a slash anchors it at the base
// ("docs/*.md", "/build"; a leading "./" too); a trailing slash matches
// folders only (".git/"); and a pattern that matches a folder matches
// everything in it.
type PathPattern struct {
	raw     string
	p       *Pattern // anchored: "**/" leads an unanchored pattern
	dirOnly bool
}

// CompilePath checks and compiles an include or ignore pattern.
func CompilePath(pat string) (*PathPattern, error) {
	pp := &PathPattern{raw: pat}
	s := strings.TrimSpace(pat)
	if s == "" {
		return nil, errors.New("empty pattern")
	}
	if strings.HasSuffix(s, "/") {
		pp.dirOnly = true
		s = strings.TrimRight(s, "/")
	}
	anchored := strings.Contains(s, "/")
	s = strings.TrimLeft(s, "/")
	for strings.HasPrefix(s, "./") {
		s = strings.TrimLeft(s[2:], "/")
	}
	if s == "" || s == "." {
		return nil, fmt.Errorf("pattern %q names no path", pat)
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == ".." || seg == "." {
			return nil, fmt.Errorf("pattern %q: %q is not allowed in a pattern", pat, seg)
		}
	}
	if !anchored {
		s = anySegments + "/" + s
	}
	p, err := Compile(s, Slash)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pat, errors.Unwrap(err))
	}
	pp.p = p
	return pp, nil
}

// String returns the pattern as written.
func (pp *PathPattern) String() string { return pp.raw }

// Match reports whether the path rel (a folder when dir is set), or one of
// the folders it is in, matches.
func (pp *PathPattern) Match(rel string, dir bool) bool {
	segs := strings.Split(rel, "/")
	for k := 1; k <= len(segs); k++ {
		if pp.dirOnly && k == len(segs) && !dir {
			continue
		}
		if matchSegs(pp.p.segs, segs[:k]) {
			return true
		}
	}
	return false
}
