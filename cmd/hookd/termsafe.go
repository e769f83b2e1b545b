package main

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// termSafe is the writer under every command's stdout and stderr: what
// hookd prints comes in part from events, commands' output and models
// (a step's output, an error, a tool name a model made up), and a control
// character in it would be obeyed by the terminal — an escape sequence
// can recolour or clear the screen, rewrite the window title, move the
// cursor over earlier lines, or (OSC 52) set the clipboard. So each C0
// control but newline and tab, DEL, each C1 control, and the bidirectional
// overrides (U+202A–U+202E, U+2066–U+2069, which reorder what a line
// shows) is written as its \uXXXX escape, and a byte that is not UTF-8 as
// \xXX. JSON output is unchanged in meaning: encoding/json escapes the C0
// controls and replaces bad UTF-8 itself, and a \uXXXX escape inside a JSON
// string is the same string. hookd's own sequences (the live line of fire
// --wait) go through WriteRaw.
type termSafe struct {
	w     io.Writer
	carry []byte // the start of a UTF-8 sequence the last write cut
	buf   []byte
}

func newTermSafe(w io.Writer) *termSafe { return &termSafe{w: w} }

// escapedRune reports whether r is written escaped.
func escapedRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

func (t *termSafe) Write(p []byte) (int, error) {
	in := p
	if len(t.carry) > 0 {
		in = append(t.carry, p...)
		t.carry = nil
	}
	// Plain text (printable ASCII, newlines and tabs: a table of 10,000
	// hooks) is written as it is, without a copy.
	plain := 0
	for plain < len(in) && (in[plain] >= 0x20 && in[plain] < 0x7f || in[plain] == '\n' || in[plain] == '\t') {
		plain++
	}
	if plain == len(in) {
		if _, err := t.w.Write(in); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	out := append(t.buf[:0], in[:plain]...)
	for i := plain; i < len(in); {
		c := in[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			out = append(out, c)
			i++
			continue
		}
		if c >= utf8.RuneSelf && !utf8.FullRune(in[i:]) && len(in)-i < utf8.UTFMax {
			t.carry = append([]byte(nil), in[i:]...) // the rest comes with the next write
			break
		}
		r, n := utf8.DecodeRune(in[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = fmt.Appendf(out, `\x%02x`, c)
		case escapedRune(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, in[i:i+n]...)
		}
		i += n
	}
	t.buf = out
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes what an unfinished sequence left, escaped byte by byte.
func (t *termSafe) Close() error {
	if len(t.carry) == 0 {
		return nil
	}
	var out []byte
	for _, c := range t.carry {
		out = fmt.Appendf(out, `\x%02x`, c)
	}
	t.carry = nil
	_, err := t.w.Write(out)
	return err
}

// WriteRaw writes hookd's own control sequences unchanged.
func (t *termSafe) WriteRaw(s string) {
	io.WriteString(t.w, s)
}

// writeRaw writes hookd's own control sequence s to w unchanged when w
// lets it (termSafe, or flushFirst over one), else as any text.
func writeRaw(w io.Writer, s string) {
	switch w := w.(type) {
	case *termSafe:
		w.WriteRaw(s)
	case *flushFirst:
		w.out.Flush()
		writeRaw(w.w, s)
	default:
		io.WriteString(w, s)
	}
}
