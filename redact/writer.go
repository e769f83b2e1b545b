package redact

import (
	"io"
	"strings"
	"sync"
)

// Writer returns a writer that redacts what is written to it before
// passing it on to w, so that what w keeps (a capped buffer) never holds
// a piece of a secret. It holds back at most the length of the longest
// form of a secret, until more is written or it is closed; Close writes
// what it holds and does not close w. Write and Close may be called from
// different goroutines. With a nil Redactor it returns w as it is.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser {
	if r == nil {
		return nopCloser{w}
	}
	return &redactWriter{r: r, w: w}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

type redactWriter struct {
	r   *Redactor
	w   io.Writer
	mu  sync.Mutex
	buf []byte
	out strings.Builder
}

// Write never fails: what w does with the text is w's business.
func (rw *redactWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.buf = append(rw.buf, p...)
	rw.flush(false)
	return len(p), nil
}

func (rw *redactWriter) Close() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.flush(true)
	return nil
}

func (rw *redactWriter) flush(final bool) {
	if len(rw.buf) == 0 {
		return
	}
	rw.out.Reset()
	n := rw.r.redact(string(rw.buf), final, &rw.out)
	rw.buf = append(rw.buf[:0], rw.buf[n:]...)
	if rw.out.Len() > 0 {
		_, _ = io.WriteString(rw.w, rw.out.String())
	}
}
