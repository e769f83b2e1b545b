package main

import (
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/hookd/hookd/internal/textsafe"
)

// termSafe is the writer under every command's stdout and stderr: what
// hookd prints comes in part from events, commands' output and models
// (a step's output, an error, a tool name a model made up), and a control
// character in it would be obeyed by the terminal — an escape sequence
// can recolour or clear the screen, rewrite the window title, move the
// cursor over earlier lines, or (OSC 52) set the clipboard. So each
// character textsafe.Escaped names (C0 controls but newline and tab, DEL,
// C1 controls, the bidirectional overrides, which reorder what a line
// shows) is written as its \uXXXX escape, and a byte that is not UTF-8 as
// \xXX, as the dashboard shows them too. JSON output is unchanged in meaning: encoding/json escapes the C0
// controls and replaces bad UTF-8 itself, and a \uXXXX escape inside a JSON
// string is the same string. hookd's own sequences (the live line of fire
// --wait) go through WriteRaw.
type termSafe struct {
	w     io.Writer
	carry []byte // the start of a UTF-8 sequence the last write cut
	buf   []byte
}

func newTermSafe(w io.Writer) *termSafe { return &termSafe{w: w} }

func (t *termSafe) Write(p []byte) (int, error) {
	in := p
	if len(t.carry) > 0 {
		in = append(t.carry, p...)
		t.carry = nil
	}
	// Plain text (printable ASCII, newlines and tabs: a table of 10,000
	// hooks) is written as it is, without a copy.
	plain := 0
	for plain < len(in) && textsafe.Plain(in[plain]) {
		plain++
	}
	if plain == len(in) {
		if _, err := t.w.Write(in); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	out := append(t.buf[:0], in[:plain]...)
	rest := in[plain:]
	if n := cutSequence(rest); n < len(rest) {
		t.carry = append([]byte(nil), rest[n:]...) // the rest comes with the next write
		rest = rest[:n]
	}
	out = textsafe.Append(out, rest)
	t.buf = out
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// cutSequence returns how much of b ends on a whole UTF-8 sequence: all
// of it unless it ends inside one (which the next write completes).
func cutSequence(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if b[i] >= utf8.RuneSelf && !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
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
// lets it (termSafe, or a command's output or flushFirst over one), else
// as any text.
func writeRaw(w io.Writer, s string) {
	switch w := w.(type) {
	case *termSafe:
		w.WriteRaw(s)
	case *output:
		w.Flush()
		w.safe.WriteRaw(s)
	case *flushFirst:
		w.out.Flush()
		writeRaw(w.w, s)
	default:
		io.WriteString(w, s)
	}
}
