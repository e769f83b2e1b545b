package engine

import (
	"strings"
	"unicode/utf8"
)

// Clip shortens s for display to at most n characters, the last of them
// "…" when it cut: it counts and cuts whole characters (runes), never
// bytes, so a cut never splits a UTF-8 character.
func Clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	k := 0
	for i := range s {
		if k == n-1 {
			return s[:i] + "…"
		}
		k++
	}
	return s
}

// OneLine is s with its runs of white space, newlines included, made one
// space each, clipped to n characters: a message fit for one line of a
// table, a log or an event stream.
func OneLine(s string, n int) string {
	return Clip(strings.Join(strings.Fields(s), " "), n)
}
