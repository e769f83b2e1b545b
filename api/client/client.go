// Package client talks to a running hookd daemon over its unix socket:
// the control API that package server serves, with the types of package
// api.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
)

// Client talks to a running daemon over its unix socket.
type Client struct {
	http *http.Client
}

type traceKey struct{}

// WithTraceParent returns ctx whose requests carry tp as their W3C
// traceparent header: the runs they start continue the caller's trace.
func WithTraceParent(ctx context.Context, tp engine.TraceParent) context.Context {
	return context.WithValue(ctx, traceKey{}, tp)
}

// HealthWait is how long Dial waits for a daemon that took the
// connection to answer its health check. Nothing listening on the socket
// fails the dial at once, whatever this is; it bounds only a daemon that
// accepted and is slow to answer, as a busy one on a loaded machine is
// (2 s was too short there: 20 hookd fires at once under -race at load
// 18 were each told the daemon was "still starting" and exited 75).
const HealthWait = 15 * time.Second

// Dial returns a client for the daemon of the database db, or nil when
// none answers (DialContext with no end but HealthWait).
func Dial(db string) *Client { return DialContext(context.Background(), db) }

// DialContext is Dial that gives up when ctx ends too: a command
// interrupted (Ctrl-C), or out of the time it was given to wait, does not
// wait HealthWait for a daemon that is stopped (SIGSTOP, a frozen
// cgroup) and so took the connection but never answers.
func DialContext(ctx context.Context, db string) *Client {
	socket := api.SocketPath(db)
	if _, err := os.Stat(socket); err != nil {
		return nil
	}
	c := &Client{http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}}
	ctx, cancel := context.WithTimeout(ctx, HealthWait)
	defer cancel()
	if err := c.Do(ctx, "GET", "/healthz", nil, nil); err != nil {
		return nil
	}
	return c
}

// RemoteError is an error answer from the daemon.
type RemoteError struct {
	Status int       // the HTTP status
	Body   api.Error // the answer's body
}

func (e *RemoteError) Error() string { return e.Body.Error }

// Do sends a request with in as its JSON body (when not nil) and decodes
// the answer into out (when not nil).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.Send(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer closeBody(resp.Body)
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// maxDrain bounds what closeBody reads of an answer left unread.
const maxDrain = 64 << 10

// closeBody reads what is left of an answer's body (up to maxDrain) and
// closes it. An answer read to its end leaves its connection open for
// the client's next request (keep-alive); one closed unread closes the
// connection, and the next request dials the socket again (a connect, an
// accept and the daemon's check of the peer).
func closeBody(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxDrain))
	body.Close()
}

// Get returns the body of a successful GET.
func (c *Client) Get(ctx context.Context, path string) ([]byte, error) {
	resp, err := c.Send(ctx, "GET", path, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if resp.ContentLength > 0 && resp.ContentLength < 1<<30 {
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("read hookd's answer: %w", err)
	}
	return buf.Bytes(), nil
}

// Send sends a request with in as its JSON body (when not nil) and
// returns the answer, or the error answered.
func (c *Client) Send(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, BaseURL+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tp, _ := ctx.Value(traceKey{}).(engine.TraceParent); tp != "" {
		req.Header.Set("traceparent", string(tp))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask hookd: %w", err)
	}
	if resp.StatusCode >= 300 {
		defer closeBody(resp.Body)
		var ae api.Error
		if err := json.NewDecoder(resp.Body).Decode(&ae); err != nil || ae.Error == "" {
			ae.Error = resp.Status
		}
		return nil, &RemoteError{Status: resp.StatusCode, Body: ae}
	}
	return resp, nil
}

// ScanSSE reads Server-Sent Events from r: onComment gets each comment
// line (nil: ignored), onEvent each event's id and data; an error from
// onEvent ends the scan with it.
func ScanSSE(r io.Reader, onComment func(string), onEvent func(id, data string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var id, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != "" {
				if err := onEvent(id, data); err != nil {
					return err
				}
			}
			id, data = "", ""
		case strings.HasPrefix(line, ":"):
			if onComment != nil {
				onComment(line)
			}
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	return nil
}

// BaseURL is the URL the daemon answers at through HTTP's client: the
// host names nothing (every request goes to the socket).
const BaseURL = "http://hookd"

// HTTP is the HTTP client whose requests reach the daemon, at BaseURL:
// for the streams, read as they come.
func (c *Client) HTTP() *http.Client { return c.http }
