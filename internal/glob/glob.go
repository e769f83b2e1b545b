package glob

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Sep is the separator of a domain of names.
type Sep byte

// The domains.
const (
	Dot   Sep = '.' // event types, tool names
	Slash Sep = '/' // paths; hook names and file names, which are one segment
)

// anySegments is the segment that matches whole segments.
const anySegments = "**"

// IsPattern reports whether s is a pattern rather than a plain name: it
// holds '*', '?', '[' or '\'. A plain name matches only itself.
func IsPattern(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// Pattern is a compiled glob.
type Pattern struct {
	raw  string
	sep  Sep
	segs []string
}

// Compile checks and compiles pat for names separated by sep.
func Compile(pat string, sep Sep) (*Pattern, error) {
	if pat == "" {
		return nil, errors.New("empty pattern")
	}
	if !utf8.ValidString(pat) {
		return nil, fmt.Errorf("pattern %q is not UTF-8", pat)
	}
	p := &Pattern{raw: pat, sep: sep, segs: strings.Split(pat, string(rune(sep)))}
	for _, s := range p.segs {
		if err := checkSegment(s); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", pat, err)
		}
	}
	return p, nil
}

// MustCompile is Compile for patterns known to be good; it panics on a bad one.
func MustCompile(pat string, sep Sep) *Pattern {
	p, err := Compile(pat, sep)
	if err != nil {
		panic(err)
	}
	return p
}

// Match compiles pat and reports whether it matches name; a bad pattern
// matches nothing and is the error.
func Match(pat, name string, sep Sep) (bool, error) {
	p, err := Compile(pat, sep)
	if err != nil {
		return false, err
	}
	return p.Match(name), nil
}

// String returns the pattern as written.
func (p *Pattern) String() string { return p.raw }

// Match reports whether p matches the whole of name.
func (p *Pattern) Match(name string) bool {
	if !IsPattern(p.raw) {
		return p.raw == name
	}
	return matchSegs(p.segs, strings.Split(name, string(rune(p.sep))))
}

// matchSegs matches name's segments against pattern segments: "**"
// matches zero or more segments, but one or more as the last one.
func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == anySegments {
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
		if len(name) == 0 || !matchSegment(pat[0], name[0]) {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// checkSegment reports what is wrong with one segment of a pattern.
func checkSegment(s string) error {
	if s == "" {
		return errors.New("empty segment")
	}
	if s == anySegments {
		return nil
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '\\':
			if i+1 == len(s) {
				return errors.New(`'\' at the end escapes nothing`)
			}
			_, n := utf8.DecodeRuneInString(s[i+1:])
			i += 1 + n
		case '[':
			n, err := classLen(s[i:])
			if err != nil {
				return err
			}
			i += n
		case '*':
			if i+1 < len(s) && s[i+1] == '*' {
				return fmt.Errorf("** must be a whole segment (got %q); use * within a segment", s)
			}
			i++
		default:
			i++
		}
	}
	return nil
}

// classLen returns the length of the class that s starts with ("[...]").
func classLen(s string) (int, error) {
	i := 1
	if i < len(s) && s[i] == '^' {
		i++
	}
	if i < len(s) && s[i] == ']' {
		return 0, errors.New("empty []")
	}
	for {
		if i >= len(s) {
			return 0, errors.New("unclosed [")
		}
		if s[i] == ']' {
			return i + 1, nil
		}
		lo, n, err := classChar(s[i:])
		if err != nil {
			return 0, err
		}
		i += n
		if i < len(s) && s[i] == '-' {
			hi, n, err := classChar(s[i+1:])
			if err != nil {
				return 0, err
			}
			if hi < lo {
				return 0, fmt.Errorf("range %c-%c runs backwards", lo, hi)
			}
			i += 1 + n
		}
	}
}

// classChar reads one character of a class, which may be escaped.
func classChar(s string) (rune, int, error) {
	if s == "" || s[0] == ']' || s[0] == '-' {
		return 0, 0, errors.New("bad character class")
	}
	if s[0] == '\\' {
		if len(s) < 2 {
			return 0, 0, errors.New("unclosed [")
		}
		r, n := utf8.DecodeRuneInString(s[1:])
		return r, 1 + n, nil
	}
	r, n := utf8.DecodeRuneInString(s)
	return r, n, nil
}

// matchSegment reports whether the checked pattern segment pat matches
// the whole of seg (which holds no separator).
func matchSegment(pat, seg string) bool {
	// star is where the last '*' was seen and how far it has eaten.
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(seg) || pi < len(pat) {
		if pi < len(pat) {
			switch pat[pi] {
			case '*':
				starP, starS = pi, si
				pi++
				continue
			case '?':
				if si < len(seg) {
					_, n := utf8.DecodeRuneInString(seg[si:])
					pi, si = pi+1, si+n
					continue
				}
			case '[':
				if si < len(seg) {
					r, n := utf8.DecodeRuneInString(seg[si:])
					cl, _ := classLen(pat[pi:])
					if inClass(pat[pi:pi+cl], r) {
						pi, si = pi+cl, si+n
						continue
					}
				}
			default:
				lit, adv := pat[pi:pi+1], 1
				if pat[pi] == '\\' {
					_, n := utf8.DecodeRuneInString(pat[pi+1:])
					lit, adv = pat[pi+1:pi+1+n], 1+n
				}
				if strings.HasPrefix(seg[si:], lit) {
					pi, si = pi+adv, si+len(lit)
					continue
				}
			}
		}
		if starP >= 0 && starS < len(seg) {
			_, n := utf8.DecodeRuneInString(seg[starS:])
			starS += n
			pi, si = starP+1, starS
			continue
		}
		return false
	}
	return true
}

// inClass reports whether r is in the checked class cl ("[...]").
func inClass(cl string, r rune) bool {
	body := cl[1 : len(cl)-1]
	neg := false
	if strings.HasPrefix(body, "^") {
		neg, body = true, body[1:]
	}
	in := false
	for body != "" {
		lo, n, _ := classChar(body)
		body = body[n:]
		hi := lo
		if strings.HasPrefix(body, "-") {
			h, n, _ := classChar(body[1:])
			hi, body = h, body[1+n:]
		}
		if lo <= r && r <= hi {
			in = true
		}
	}
	return in != neg
}
