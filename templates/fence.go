package templates

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Fence markers: a block is
//
//	<<<DATA 5f2e9c41 steps.tests.stdout
//	...the value...
//	DATA 5f2e9c41>>>
const (
	openPrefix  = "<<<DATA "
	closePrefix = "DATA "
	closeSuffix = ">>>"
)

// FenceID returns the id of the fence around value: 8 hex digits derived
// from the value, chosen so that the value does not contain the fence's
// closing text (Closer) anywhere. The same value always gets the same id,
// so a prompt renders the same from the same context.
func FenceID(value string) string {
	return fenceIDFrom(value, sha256.Sum256([]byte(value)))
}

// fenceIDFrom derives the id from sum, the value's digest.
func fenceIDFrom(value string, sum [32]byte) string {
	var id [8]byte
	for {
		hex.Encode(id[:], sum[:4])
		if !strings.Contains(value, closePrefix+string(id[:])+closeSuffix) {
			return string(id[:])
		}
		// The value holds this closer (it would have to have been made
		// for it): derive the next candidate.
		sum = sha256.Sum256(sum[:])
	}
}

// Closer returns the line that closes the fence with id.
func Closer(id string) string { return closePrefix + id + closeSuffix }

// writer builds a prompt. Blocks start and end on lines of their own.
type writer struct {
	buf       []byte
	lineAfter bool // a block just closed: the next text starts a new line
}

// Write appends p as instruction text (for text/template).
func (w *writer) Write(p []byte) (int, error) {
	w.text(string(p))
	return len(p), nil
}

// text appends instruction text. After a block, it starts on a new line:
// a newline the text starts with serves, blanks before the text are
// dropped.
func (w *writer) text(s string) {
	if s == "" {
		return
	}
	if w.lineAfter {
		w.lineAfter = false
		if s[0] == '\n' {
			s = s[1:]
		} else {
			s = strings.TrimLeft(s, " \t")
		}
	}
	w.buf = append(w.buf, s...)
}

// inline appends a value as one Go-quoted string: a quote or a backslash
// inside it is escaped, so the value cannot end the string early.
func (w *writer) inline(s string) {
	w.lineAfter = false
	w.buf = strconv.AppendQuote(w.buf, s)
}

// block appends a value in a fence of its own, on lines of their own.
func (w *writer) block(source, s string) {
	w.lineAfter = false
	// Start on a new line: after text on the line, the blanks that
	// ended it go and a newline follows; indentation alone stays.
	trimmed := len(w.buf)
	for trimmed > 0 && (w.buf[trimmed-1] == ' ' || w.buf[trimmed-1] == '\t') {
		trimmed--
	}
	if trimmed > 0 && w.buf[trimmed-1] != '\n' {
		w.buf = append(w.buf[:trimmed], '\n')
	}
	id := FenceID(s)
	w.buf = append(w.buf, openPrefix...)
	w.buf = append(w.buf, id...)
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, source...)
	w.buf = append(w.buf, '\n')
	w.buf = append(w.buf, s...)
	if s != "" && s[len(s)-1] != '\n' {
		w.buf = append(w.buf, '\n')
	}
	w.buf = append(w.buf, closePrefix...)
	w.buf = append(w.buf, id...)
	w.buf = append(w.buf, closeSuffix...)
	w.buf = append(w.buf, '\n')
	w.lineAfter = true
}

// capValue keeps at most max bytes of s: its head and its tail, cut at
// character boundaries, around a "[hookd: N bytes truncated]" marker. cut
// reports whether anything was dropped.
func capValue(s string, max int) (out string, cut bool) {
	if len(s) <= max {
		return s, false
	}
	head := max / 2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (max - head)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	dropped := tail - head
	var b strings.Builder
	b.Grow(max + 40)
	b.WriteString(s[:head])
	b.WriteString("\n[hookd: ")
	b.WriteString(strconv.Itoa(dropped))
	b.WriteString(" bytes truncated]\n")
	b.WriteString(s[tail:])
	return b.String(), true
}
