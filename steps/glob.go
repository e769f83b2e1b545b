package steps

import (
	"fmt"
	"path"
	"strings"
)

// globPattern is a gitignore-style pattern over slash-separated relative
// paths: '*', '?' and '[...]' match within one segment, a "**" segment
// matches any number of segments, a pattern without a slash (but for a
// trailing one) matches at any depth, a leading slash anchors it to the
// base, and a trailing slash matches directories only.
type globPattern struct {
	raw     string
	segs    []string // with a leading "**" when the pattern is not anchored
	dirOnly bool
}

func compileGlob(p string) (*globPattern, error) {
	g := &globPattern{raw: p}
	s := strings.TrimSpace(p)
	if s == "" {
		return nil, fmt.Errorf("empty pattern")
	}
	if strings.HasSuffix(s, "/") {
		g.dirOnly = true
		s = strings.TrimRight(s, "/")
	}
	anchored := strings.Contains(s, "/")
	s = strings.TrimPrefix(s, "/")
	if s == "" {
		return nil, fmt.Errorf("pattern %q matches nothing", p)
	}
	if !anchored {
		g.segs = append(g.segs, "**")
	}
	for _, seg := range strings.Split(s, "/") {
		switch {
		case seg == "" || seg == ".":
			continue
		case seg == "..":
			return nil, fmt.Errorf("pattern %q: '..' is not allowed", p)
		case seg == "**":
			if len(g.segs) > 0 && g.segs[len(g.segs)-1] == "**" {
				continue // a run of ** is one **
			}
		case strings.Contains(seg, "**"):
			return nil, fmt.Errorf("pattern %q: ** must be a whole path segment", p)
		default:
			if _, err := path.Match(seg, ""); err != nil {
				return nil, fmt.Errorf("pattern %q: %w", p, err)
			}
		}
		g.segs = append(g.segs, seg)
	}
	return g, nil
}

// match reports whether the relative path rel (slash-separated) matches.
func (g *globPattern) match(rel string, isDir bool) bool {
	if g.dirOnly && !isDir {
		return false
	}
	return matchSegs(g.segs, strings.Split(rel, "/"))
}

// matchDir reports whether the directory rel and everything under it are
// matched: the pattern matches it, or it ends in "/**" and the rest
// matches it.
func (g *globPattern) matchDir(rel string) bool {
	if g.match(rel, true) {
		return true
	}
	n := len(g.segs)
	return n >= 2 && g.segs[n-1] == "**" && matchSegs(g.segs[:n-1], strings.Split(rel, "/"))
}

// matchSegs matches path segments against pattern segments. A final "**"
// needs at least one segment (as in gitignore, "a/**" is what is inside
// a); elsewhere "**" matches zero or more.
func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return len(name) > 0
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
