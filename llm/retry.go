package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// RetryPolicy says how a failed model call is retried: on 408, 429 and 5xx
// answers, timeouts and broken connections, with exponential backoff and
// jitter, or after the server's Retry-After when it sends one. Other
// answers fail at once.
type RetryPolicy struct {
	MaxAttempts   int           // attempts per model call (default 5)
	Base          time.Duration // first backoff (default 500ms); each next one doubles
	Max           time.Duration // longest backoff (default 30s)
	MaxRetryAfter time.Duration // longest Retry-After honoured (default 2m); longer fails the call
}

func (p *RetryPolicy) setDefaults() {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 5
	}
	if p.Base <= 0 {
		p.Base = 500 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 30 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 2 * time.Minute
	}
}

// backoff is the pause before attempt n+1 (n >= 1): Base·2^(n-1), capped
// at Max, with jitter in [d/2, d].
func (p *RetryPolicy) backoff(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	return d/2 + rand.N(d/2+1)
}

// slot receives what the HTTP layer saw of one attempt: go-openai keeps
// the headers of a failed response to itself, and does not say whether a
// response carried usage at all.
type slot struct {
	status int
	header http.Header
	body   bytes.Buffer // a successful response's body, as read by the decoder
}

type slotKey struct{}

// doer is the HTTP client go-openai talks through. It copies each
// response's status, headers and (for a success) body into the slot of
// the request's context.
type doer struct{ c *http.Client }

func (d doer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	if s, ok := req.Context().Value(slotKey{}).(*slot); ok && resp != nil {
		s.status, s.header = resp.StatusCode, resp.Header
		if resp.StatusCode < 300 {
			resp.Body = teeBody{io.TeeReader(resp.Body, &s.body), resp.Body}
		}
	}
	return resp, err
}

type teeBody struct {
	io.Reader
	io.Closer
}

// callError is a model call that failed, classified.
type callError struct {
	status int    // HTTP status, 0 for transport errors
	msg    string // what the server said, or the transport error
	retry  bool
	err    error
}

func (e *callError) Error() string {
	if e.status > 0 {
		return fmt.Sprintf("HTTP %d: %s", e.status, e.msg)
	}
	return e.msg
}

func (e *callError) Unwrap() error { return e.err }

// classify says whether err, from an attempt whose context was actx, is
// worth retrying, and what to record of it.
func classify(err error, actx context.Context) *callError {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		return &callError{status: apiErr.HTTPStatusCode, msg: oneLine(apiErr.Message, 2000), retry: retryStatus(apiErr.HTTPStatusCode), err: err}
	case errors.As(err, &reqErr):
		msg := strings.TrimSpace(string(reqErr.Body))
		if msg == "" && reqErr.Err != nil {
			msg = reqErr.Err.Error()
		}
		if msg == "" {
			msg = http.StatusText(reqErr.HTTPStatusCode)
		}
		return &callError{status: reqErr.HTTPStatusCode, msg: oneLine(msg, 2000), retry: retryStatus(reqErr.HTTPStatusCode), err: err}
	case actx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		return &callError{msg: "no answer within the attempt timeout", retry: true, err: err}
	}
	var ne net.Error
	retry := errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		(errors.As(err, &ne) && ne.Timeout())
	return &callError{msg: err.Error(), retry: retry, err: err}
}

func retryStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// retryAfter reads Retry-After (seconds or an HTTP date) or retry-after-ms.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "…"
	}
	return s
}
