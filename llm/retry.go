package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/internal/backoff"
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
// at Max, less up to half of it to jitter.
func (p *RetryPolicy) backoff(n int) time.Duration {
	return backoff.Policy{Base: p.Base, Max: p.Max, Jitter: 0.5}.Delay(n, rand.Float64())
}

// slot receives what the HTTP layer saw of one attempt: go-openai keeps
// the headers and status of a failed response to itself, loses the body
// of an error not in OpenAI's shape, and does not say whether a response
// carried usage at all.
type slot struct {
	status int
	header http.Header
	body   bytes.Buffer // the response body as read by go-openai: whole for a success, up to errorBodyMax for an error
}

// errorBodyMax is how much of an error response's body is kept.
const errorBodyMax = 64 << 10

type slotKey struct{}

// doer is the HTTP client go-openai talks through. It copies each
// response's status, headers and body into the slot of the request's
// context.
type doer struct{ c *http.Client }

func (d doer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	if resp != nil {
		resp.Body = teeBody{&capReader{r: resp.Body, left: MaxAnswerBytes}, resp.Body}
	}
	if s, ok := req.Context().Value(slotKey{}).(*slot); ok && resp != nil {
		s.status, s.header = resp.StatusCode, resp.Header
		var w io.Writer = &s.body
		if resp.StatusCode >= 300 {
			w = &capWriter{buf: &s.body, max: errorBodyMax}
		}
		resp.Body = teeBody{io.TeeReader(resp.Body, w), resp.Body}
	}
	return resp, err
}

type teeBody struct {
	io.Reader
	io.Closer
}

// MaxAnswerBytes bounds the body of one model server response, an answer
// or an error: what is past it is not read, and the call fails, not
// retried. A model's answer is bounded by its output tokens (128k tokens
// are about 0.5 MiB of JSON), so only a broken or hostile server comes
// near it; without a bound it could make hookd hold any amount in memory
// (go-openai reads bodies whole).
const MaxAnswerBytes = 16 << 20

// errAnswerTooLarge is the error of a body longer than MaxAnswerBytes.
var errAnswerTooLarge = fmt.Errorf("the server's answer is longer than %d MiB; hookd reads no more of it", MaxAnswerBytes>>20)

// capReader reads r up to left bytes, then fails with errAnswerTooLarge.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more says whether the body ends exactly at the bound.
		var one [1]byte
		if n, err := c.r.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, errAnswerTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// capWriter keeps the first max bytes written to it.
type capWriter struct {
	buf *bytes.Buffer
	max int
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// callError is a model call that failed, classified.
type callError struct {
	status int    // HTTP status, 0 for transport errors
	msg    string // what the server said, or the transport error
	body   string // the response body, trimmed, when there was one
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

// classify says whether err, from an attempt whose context was actx and
// whose response the slot s saw, is worth retrying, and what to record of
// it. An HTTP error is judged by its status, whatever shape its body has;
// the message is the one the body holds, or the body itself.
func classify(err error, actx context.Context, s *slot) *callError {
	if errors.Is(err, errAnswerTooLarge) {
		return &callError{status: s.status, msg: errAnswerTooLarge.Error(), err: err}
	}
	if s.status >= 300 {
		body := s.body.Bytes()
		msg, _, _ := serverSaid(body)
		if msg == "" {
			msg = bodyText(body, s.header, s.status)
		}
		return &callError{status: s.status, msg: oneLine(msg, 2000), body: trimBody(body), retry: retryStatus(s.status), err: err}
	}
	if actx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		return &callError{msg: "no answer within the attempt timeout", retry: true, err: err}
	}
	var ne net.Error
	retry := errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		(errors.As(err, &ne) && ne.Timeout())
	ce := &callError{status: s.status, msg: err.Error(), retry: retry, err: err}
	if s.status > 0 && s.body.Len() > 0 {
		// Answered, but not with a chat completion go-openai could read.
		ce.msg = "the answer is not a chat completion: " + err.Error()
		ce.body = trimBody(s.body.Bytes())
	}
	return ce
}

// answerError classifies a 200 answer with no choices: an error body
// (OpenRouter answers 200 with {"error":{"code":502,...}} when an upstream
// provider fails) is retried like the status it names; anything else is
// a failure that is not retried.
func answerError(s *slot) *callError {
	body := s.body.Bytes()
	msg, code, isErr := serverSaid(body)
	if !isErr {
		return &callError{status: s.status, msg: "the server answered with no choices: " + oneLine(string(body), 300), body: trimBody(body)}
	}
	if msg == "" {
		msg = oneLine(string(body), 300)
	}
	ce := &callError{status: s.status, msg: "error body: " + oneLine(msg, 2000), body: trimBody(body)}
	if code >= 400 && code <= 599 {
		ce.retry = retryStatus(code)
		ce.msg = fmt.Sprintf("error body (code %d): %s", code, oneLine(msg, 2000))
	}
	return ce
}

// serverSaid decodes an error body in the shapes servers use:
//
//	{"error":{"message":M,"code":C}}   OpenAI, OpenRouter (C: the upstream status)
//	{"object":"error","message":M}     vLLM
//	{"error":M}                        Ollama, TGI, llama.cpp's older builds
//	{"error":L,"message":M}            Express, Hono, some proxies (L: a label, "SyntaxError"; shown as "L: M")
//	{"detail":M}                       FastAPI servers
//	{"message":M}
//
// msg is "" when no message decodes (the body is then shown as it is);
// code is a numeric code, 0 if none; isErr says the body is a JSON error
// (it has a non-null "error", or object "error").
func serverSaid(body []byte) (msg string, code int, isErr bool) {
	var label string // a bare "error" string: the message, or a label of the one beside it
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return "", 0, false
	}
	str := func(raw json.RawMessage) string {
		var v string
		if json.Unmarshal(raw, &v) == nil {
			return strings.TrimSpace(v)
		}
		return ""
	}
	num := func(raw json.RawMessage) int {
		var n int
		if json.Unmarshal(raw, &n) == nil {
			return n
		}
		if v, err := strconv.Atoi(str(raw)); err == nil {
			return v
		}
		return 0
	}
	if raw, ok := top["error"]; ok && string(raw) != "null" {
		isErr = true
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) == nil {
			msg, code = str(inner["message"]), num(inner["code"])
		} else {
			label = str(raw)
		}
	}
	if str(top["object"]) == "error" {
		isErr = true
		if code == 0 {
			code = num(top["code"])
		}
	}
	if msg == "" {
		msg = str(top["message"])
	}
	if msg == "" {
		msg = str(top["detail"])
	}
	switch {
	case label == "":
	case msg == "":
		msg = label
	case !strings.Contains(msg, label):
		msg = label + ": " + msg
	}
	return msg, code, isErr
}

// htmlTag matches what bodyText leaves out of an HTML page: its head,
// scripts, styles and tags.
var htmlTag = regexp.MustCompile(`(?is)<(head|script|style)\b[^>]*>.*?</(head|script|style)>|<[^>]*>`)

// bodyText is what to show of an error body no message decodes from: its
// text (an HTML page's without the markup), or the status text when it is
// empty.
func bodyText(body []byte, h http.Header, status int) string {
	text := strings.TrimSpace(string(body))
	if strings.Contains(h.Get("Content-Type"), "html") || strings.HasPrefix(text, "<") {
		page := text
		text = strings.TrimSpace(html.UnescapeString(htmlTag.ReplaceAllString(page, " ")))
		if text == "" { // all in the head: keep its title
			text = html.UnescapeString(anyTag.ReplaceAllString(page, " "))
		}
	}
	text = oneLine(text, 300)
	if text == "" {
		st := http.StatusText(status)
		if st == "" {
			st = "status " + strconv.Itoa(status)
		}
		return st + " (the body is empty)"
	}
	return text
}

var anyTag = regexp.MustCompile(`<[^>]*>`)

// trimBody is what the transcript keeps of a response body.
func trimBody(body []byte) string {
	return oneLine(string(body), 1000)
}

func retryStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// sleep waits d on clock's timer, or until ctx is done.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
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
