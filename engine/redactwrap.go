package engine

import (
	"sort"
	"strings"
)

// A wrappedMatch is a form of a secret found in a text with line breaks
// inside it, as programs wrap base64 (base64's 76 columns, PEM's and
// openssl's 64, any -w N, CRLF in MIME): s[start:end] is replaced by to.
type wrappedMatch struct {
	start, end int
	to         string
}

// isWrapChar reports whether c may be part of a line of base64 (either
// alphabet, with padding).
func isWrapChar(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '+' || c == '/' || c == '=' || c == '-' || c == '_'
}

// wrapped finds the forms of secrets that lie across line breaks in s:
// it joins each chain of base64 runs (maximal runs of base64 characters)
// separated by one line break ("\n" or "\r\n") and looks for the
// patterns made of base64 characters in the joined text; a match that
// crosses a break is reported with its place in s. The result is sorted
// by start, longest first. A chain shorter than the shortest such
// pattern is not joined: ordinary text costs a scan of its line ends.
func (r *Redactor) wrapped(s string) []wrappedMatch {
	if len(r.wrapPats) == 0 {
		return nil
	}
	var out []wrappedMatch
	var runBuf [8]int
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			break
		}
		nl := i + j
		end := nl // the first run ends before the line break
		if end > i && s[end-1] == '\r' {
			end--
		}
		start := end
		for start > i && isWrapChar(s[start-1]) {
			start--
		}
		if start == end || nl+1 >= len(s) || !isWrapChar(s[nl+1]) {
			i = nl + 1
			continue
		}
		// The chain's runs, as [from, to) pairs, and their length.
		runs := append(runBuf[:0], start, end)
		n := end - start
		for {
			next := end
			if next < len(s) && s[next] == '\r' {
				next++
			}
			if next >= len(s) || s[next] != '\n' || next+1 >= len(s) || !isWrapChar(s[next+1]) {
				break
			}
			start, end = next+1, next+1
			for end < len(s) && isWrapChar(s[end]) {
				end++
			}
			runs = append(runs, start, end)
			n += end - start
		}
		if n >= r.wrapMin {
			out = r.wrappedIn(s, runs, n, out)
		}
		i = max(end, i+1)
	}
	if len(out) > 1 {
		sort.Slice(out, func(a, b int) bool {
			if out[a].start != out[b].start {
				return out[a].start < out[b].start
			}
			return out[a].end > out[b].end
		})
	}
	return out
}

// wrappedIn appends to out each base64 pattern found in the chain of
// runs of s (from, to pairs; n characters in all) joined, that crosses
// a line break, with its place in s.
func (r *Redactor) wrappedIn(s string, runs []int, n int, out []wrappedMatch) []wrappedMatch {
	joined := make([]byte, 0, n)
	at := make([]int, 0, n) // at[i]: where joined[i] is in s
	for k := 0; k < len(runs); k += 2 {
		joined = append(joined, s[runs[k]:runs[k+1]]...)
		for x := runs[k]; x < runs[k+1]; x++ {
			at = append(at, x)
		}
	}
	text := string(joined)
	for _, p := range r.wrapPats {
		if len(p.from) > len(text) {
			continue
		}
		for from := 0; ; {
			k := strings.Index(text[from:], p.from)
			if k < 0 {
				break
			}
			k += from
			last := k + len(p.from) - 1
			if at[last]-at[k] != last-k { // crosses a break
				out = append(out, wrappedMatch{start: at[k], end: at[last] + 1, to: p.to})
			}
			from = k + 1
		}
	}
	return out
}
