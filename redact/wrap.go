package redact

import (
	"cmp"
	"slices"
	"strings"
)

// wrapIndex finds, at a line break, the wrapped patterns that may go on
// across it: by the characters on either side of it, which are two
// consecutive characters of the pattern.
type wrapIndex struct {
	bits  [1 << 16 / 64]uint64 // the pairs some candidate has
	cands map[uint16][]wrapCand
}

// wrapCand is a pattern whose k-th character follows a line break.
type wrapCand struct{ pat, k int }

func pairKey(x, y byte) uint16 { return uint16(x)<<8 | uint16(y) }

func newWrapIndex(pats []redactPattern) *wrapIndex {
	w := &wrapIndex{cands: map[uint16][]wrapCand{}}
	for i, p := range pats {
		if !p.wrapped {
			continue
		}
		for k := 1; k < len(p.from); k++ {
			key := pairKey(p.from[k-1], p.from[k])
			w.bits[key/64] |= 1 << (key % 64)
			w.cands[key] = append(w.cands[key], wrapCand{i, k})
		}
	}
	return w
}

// wrappedMatch is a match of a wrapped pattern with a line break in it.
type wrappedMatch struct{ pat, start, end int }

// wrappedMatches lists the matches in s of the wrapped patterns that
// hold a line break, by pattern and then start. (The ones without are
// found by strings.Index.) Each is found at a line break inside it: the
// pattern must spell the text on both sides of it.
func (r *Redactor) wrappedMatches(s string) []wrappedMatch {
	var ms []wrappedMatch
	set := "\n"
	if strings.IndexByte(s, '\r') >= 0 {
		set = "\r\n"
	}
	for i := 0; ; {
		j := strings.IndexAny(s[i:], set)
		if j < 0 {
			break
		}
		bs := i + j
		be := skipBreak(s, bs)
		i = be
		if bs == 0 || be >= len(s) {
			continue
		}
		key := pairKey(s[bs-1], s[be])
		if r.wrap.bits[key/64]&(1<<(key%64)) == 0 {
			continue
		}
		for _, c := range r.wrap.cands[key] {
			p := r.pats[c.pat].from
			a := matchWrappedBack(s, bs, p[:c.k])
			if a < 0 {
				continue
			}
			if e := matchWrapped(s, be, p[c.k:]); e >= 0 {
				ms = append(ms, wrappedMatch{c.pat, a, e})
			}
		}
	}
	if len(ms) > 1 {
		// A match with more than one line break was found at each.
		slices.SortFunc(ms, func(x, y wrappedMatch) int { return cmp.Or(x.pat-y.pat, x.start-y.start) })
		ms = slices.CompactFunc(ms, func(x, y wrappedMatch) bool { return x.pat == y.pat && x.start == y.start })
	}
	return ms
}

// matchWrapped returns the end of the text at s[i:] that spells p with
// one line break at most between two of its characters, or -1.
func matchWrapped(s string, i int, p string) int {
	for k := 0; k < len(p); k++ {
		if k > 0 && i < len(s) && s[i] != p[k] {
			i = skipBreak(s, i)
		}
		if i >= len(s) || s[i] != p[k] {
			return -1
		}
		i++
	}
	return i
}

// matchWrappedBack returns the start of the text that ends at s[:i] and
// spells p with one line break at most between two of its characters,
// or -1.
func matchWrappedBack(s string, i int, p string) int {
	for k := len(p) - 1; k >= 0; k-- {
		if k < len(p)-1 && i > 0 && s[i-1] != p[k] {
			if s[i-1] == '\n' {
				i--
			}
			if i > 0 && s[i-1] == '\r' {
				i--
			}
		}
		if i == 0 || s[i-1] != p[k] {
			return -1
		}
		i--
	}
	return i
}

// skipBreak returns i past one line break at s[i:] ("\n", "\r\n" or
// "\r"), or i when there is none.
func skipBreak(s string, i int) int {
	if i < len(s) && s[i] == '\r' {
		i++
	}
	if i < len(s) && s[i] == '\n' {
		i++
	}
	return i
}
