// Package suggest finds the name a user most likely meant: the "did you
// mean" of hook files' keys, step kinds and tool names, and of the CLI's
// commands, hook names and event types. One rule everywhere: the closest
// candidate by edit distance, where swapping two neighbouring letters
// counts as one edit (evrey → every, stpes → steps), within a third of
// the word's length (at least 1, at most 3), case ignored.
package suggest

import "strings"

// Closest returns the candidate closest to s, or "" when none is close.
// A candidate equal to s but for case is returned at once.
func Closest(s string, candidates []string) string {
	best, bestD := "", min(max(len(s)/3, 1), 3)
	ls := strings.ToLower(s)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == ls {
			return c
		}
		if d := Distance(ls, lc); d <= bestD && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the edit distance between a and b, in bytes: insertions,
// deletions, substitutions and transpositions of two adjacent bytes
// (the optimal string alignment distance). Words over 64 bytes are 64
// apart unless equal.
func Distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	// Three rows: the one before the previous is for transpositions.
	pp := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		pp, prev, cur = prev, cur, pp
	}
	return prev[len(b)]
}
