package process

import "bytes"

// maxLineLen bounds one record of a splitWriter; the rest of a longer
// record is dropped.
const maxLineLen = 64 << 10

// SplitWriter cuts a stream into records ended by sep and hands each to
// fn without the separator, as the stream arrives. Memory stays bounded
// by maxLineLen whatever is written. Call Flush at the end for a last
// record without a separator.
type SplitWriter struct {
	sep  byte
	fn   func(string)
	buf  []byte
	long bool // the record in buf went past maxLineLen
}

func NewSplitWriter(sep byte, fn func(string)) *SplitWriter {
	return &SplitWriter{sep: sep, fn: fn}
}

// Write never fails.
func (w *SplitWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, w.sep)
		if i < 0 {
			w.keep(p)
			break
		}
		w.keep(p[:i])
		w.fn(string(w.buf))
		w.buf, w.long = w.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

func (w *SplitWriter) keep(p []byte) {
	if room := maxLineLen - len(w.buf); room < len(p) {
		p, w.long = p[:max(room, 0)], true
	}
	w.buf = append(w.buf, p...)
}

// Flush hands over a last record that had no separator.
func (w *SplitWriter) Flush() {
	if len(w.buf) > 0 || w.long {
		w.fn(string(w.buf))
		w.buf, w.long = w.buf[:0], false
	}
}
