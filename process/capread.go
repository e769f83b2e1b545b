package process

import (
	"bytes"
	"io"
	"unicode/utf8"

	"github.com/hookd/hookd/redact"
)

// ReadHead reads the start of r: at most limit bytes of its text once red
// has replaced the secrets in it, cut on a character boundary, and
// whether the text went on past that. It reads limit plus red's span, and
// redacts before it cuts, so a secret across the cut is replaced whole
// and no piece of it is kept.
func ReadHead(r io.Reader, limit int, red *redact.Redactor) ([]byte, bool, error) {
	read := int64(limit + red.Span())
	var out bytes.Buffer
	w := red.Writer(&out)
	n, err := io.Copy(w, io.LimitReader(r, read+1))
	if err != nil {
		return nil, false, err
	}
	cut := n > read
	if !cut {
		_ = w.Close() // the end of the text: what the redactor held back
	}
	data := out.Bytes()
	if len(data) > limit {
		data, cut = TrimPartialRune(data[:limit]), true
	}
	return data, cut, nil
}

// ReadTail reads the end of f, which is size bytes long: at most limit
// bytes of its text once red has replaced the secrets in it, and whether
// anything before that was left out. It reads from limit plus red's span
// before the end and redacts before it cuts; a secret cut at the start
// of what it read, whose end would be left, is trimmed away.
func ReadTail(f io.ReadSeeker, size int64, limit int, red *redact.Redactor) ([]byte, bool, error) {
	from := max(0, size-int64(limit+red.Span()))
	if from > 0 {
		if _, err := f.Seek(from, io.SeekStart); err != nil {
			return nil, false, err
		}
	}
	raw, err := io.ReadAll(io.LimitReader(f, size-from))
	if err != nil {
		return nil, false, err
	}
	text := red.String(string(raw))
	cut := from > 0
	if len(text) > limit {
		text, cut = text[len(text)-limit:], true
	}
	if from > 0 {
		text = red.TrimCutStart(text)
	}
	return []byte(text), cut, nil
}

// TrimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func TrimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}
