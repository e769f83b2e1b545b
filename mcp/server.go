package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/redirect"
	"github.com/hookd/hookd/sandbox"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxServerTools is the most tools hookd keeps of one MCP server: the
// first it lists; it asks for no more pages past them. A hook's tools
// stop at engine.MaxTools well before.
const MaxServerTools = 1024

// server is one configured MCP server and its current session, if any.
type server struct {
	cfg ServerConfig
	m   *Manager
	log *slog.Logger

	mu       sync.Mutex
	sess     *sdk.ClientSession
	tools    []*Tool
	dead     chan struct{} // closed when sess ended
	stderr   *tail         // of the current or last stdio process
	lastErr  error         // why the last start failed
	failedAt clock.Mono
	starts   int
	closed   bool
}

// session returns the running session, starting the server when there is
// none or the last one ended.
func (s *server) session(ctx context.Context) (*sdk.ClientSession, []*Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, ErrClosed
	}
	if s.sess != nil {
		select {
		case <-s.dead:
			s.log.Warn("mcp server exited; starting it again", "stderr", s.m.opts.Redactor.String(s.stderr.String()))
			s.sess.Close()
			s.sess, s.tools = nil, nil
		default:
			return s.sess, s.tools, nil
		}
	}
	if s.lastErr != nil && clock.Since(s.m.opts.Clock, s.failedAt) < s.m.opts.RetryAfter {
		return nil, nil, s.lastErr
	}
	if err := s.start(ctx); err != nil {
		s.lastErr, s.failedAt = err, s.m.opts.Clock.Mono()
		return nil, nil, err
	}
	s.lastErr = nil
	return s.sess, s.tools, nil
}

// start connects to the server and lists its tools; s.mu is held.
func (s *server) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	s.starts++
	transport, err := s.transport()
	if err != nil {
		return s.failed("start", err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "hookd", Version: "1"}, &sdk.ClientOptions{
		Logger: slog.New(slog.DiscardHandler),
	})
	sess, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return s.failed("start", err)
	}
	var tools []*Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			sess.Close()
			return s.failed("list tools of", err)
		}
		if len(tools) == MaxServerTools {
			s.log.Warn(fmt.Sprintf("mcp server lists more than %d tools; hookd keeps the first %d it listed", MaxServerTools, MaxServerTools))
			break
		}
		tools = append(tools, s.newTool(t))
	}
	nameTools(s.cfg.Name, tools)
	dead := make(chan struct{})
	go func() {
		sess.Wait()
		close(dead)
	}()
	s.sess, s.tools, s.dead = sess, tools, dead
	s.log.Info("mcp server started", "tools", len(tools), "start", s.starts)
	return nil
}

// failed describes a start that failed, with what the server wrote on
// stderr.
func (s *server) failed(what string, err error) error {
	msg := fmt.Sprintf("%s mcp server %s: %v", what, s.cfg.Name, err)
	if s.stderr != nil {
		// The process may still be writing; give its last words a moment.
		t := s.m.opts.Clock.NewTimer(50 * time.Millisecond)
		<-t.C()
		if e := strings.TrimSpace(s.m.opts.Redactor.String(s.stderr.String())); e != "" {
			msg += "; stderr: " + e
		}
	}
	return &StartError{Server: s.cfg.Name, Msg: msg, Err: err}
}

// StartError is a server that did not start; Msg includes its stderr.
type StartError struct {
	Server string
	Msg    string
	Err    error
}

func (e *StartError) Error() string { return e.Msg }
func (e *StartError) Unwrap() error { return e.Err }

// transport makes the transport for one start.
func (s *server) transport() (sdk.Transport, error) {
	lookup := func(k string) string {
		for i := len(s.m.opts.Environ) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(s.m.opts.Environ[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	if s.cfg.URL != "" {
		h := make(http.Header, len(s.cfg.Headers))
		for k, v := range s.cfg.Headers {
			h.Set(k, expand(v, lookup))
		}
		endpoint, err := url.Parse(s.cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("mcp_servers.%s.url does not parse: %w", s.cfg.Name, err)
		}
		// The redirect rule refuses a redirect to another origin, which
		// net/http would follow with the headers stripped and headerTransport
		// would otherwise give back; headerTransport adds them only within
		// the endpoint's origin all the same.
		client := redirect.Client(s.m.opts.HTTPClient)
		rt := client.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		client.Transport = headerTransport{rt, h, endpoint}
		return &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: client, DisableStandaloneSSE: true, MaxRetries: -1}, nil
	}
	cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
	cmd.Dir = s.cfg.Dir
	// The allowlisted part of hookd's environment and the server's env:
	// hookd's credentials reach a server only through a ${VAR} in env.
	set := make(map[string]string, len(s.cfg.Env))
	for k, v := range s.cfg.Env {
		set[k] = expand(v, lookup)
	}
	cmd.Env = engine.ChildEnv(s.m.opts.Environ, nil, set)
	s.stderr = &tail{max: 4 << 10}
	cmd.Stderr = s.stderr
	// Its own process group: a signal to hookd's terminal does not reach
	// it before hookd has stopped it in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	policy := s.cfg.Sandbox
	if policy == nil && !sandbox.Default().Status().Off {
		return nil, fmt.Errorf("a stdio server must declare its network in hookd.yaml: add sandbox: {network: false} to mcp_servers.%s "+
			"(or network: true, or a list of TCP ports, if it needs the network; writes: [PATH, ...] for what it may write beside its dir)", s.cfg.Name)
	}
	if policy != nil && policy.Workdir == "" {
		policy = policy.With(nil, nil)
		policy.Workdir = cmd.Dir
		if policy.Workdir == "" {
			wd, err := os.Getwd()
			if err != nil {
				return nil, err
			}
			policy.Workdir = wd
		}
	}
	return &sandboxTransport{cmd: cmd, policy: policy, terminate: s.m.opts.StopTimeout, clock: s.m.opts.Clock}, nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// EnvRefs lists the variables a ${VAR} in s reads.
func EnvRefs(s string) []string {
	var out []string
	for _, m := range envRef.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// expand replaces ${VAR} in s; nothing else is special.
func expand(s string, lookup func(string) string) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string { return lookup(m[2 : len(m)-1]) })
}

// headerTransport adds a server's configured headers to the requests
// sent to the origin of its endpoint.
type headerTransport struct {
	rt       http.RoundTripper
	h        http.Header
	endpoint *url.URL
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !redirect.SameOrigin(req.URL, t.endpoint) {
		return t.rt.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.h {
		req.Header[k] = v
	}
	return t.rt.RoundTrip(req)
}

func (s *server) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.sess == nil {
		return nil
	}
	err := s.sess.Close()
	s.sess = nil
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = nil // it was stopped by a signal or exited non-zero on stdin EOF
	}
	return err
}

// restart stops the server of sess, a call on which got no answer within
// call_timeout: a hung server would hold every later call for the whole
// call_timeout too, so the next call starts it again instead. Calls still
// waiting on sess end with it. Nothing happens when sess was replaced
// already.
func (s *server) restart(sess *sdk.ClientSession) {
	s.mu.Lock()
	if s.sess != sess {
		s.mu.Unlock()
		return
	}
	s.sess, s.tools = nil, nil
	s.mu.Unlock()
	s.log.Warn("mcp server did not answer a call within call_timeout; stopping it, the next call starts it again",
		"call_timeout", s.cfg.CallTimeout)
	var ee *exec.ExitError
	if err := sess.Close(); err != nil && !errors.As(err, &ee) {
		s.log.Warn("stop the hung mcp server", "err", err)
	}
}

// ended reports whether sess, which a call just failed on, has ended:
// the server exited or the connection broke. It waits a moment for the
// end to be noticed.
func (s *server) ended(sess *sdk.ClientSession) bool {
	s.mu.Lock()
	dead, current := s.dead, s.sess == sess
	s.mu.Unlock()
	if !current {
		return true
	}
	t := s.m.opts.Clock.NewTimer(500 * time.Millisecond)
	defer t.Stop()
	select {
	case <-dead:
		return true
	case <-t.C():
		return false
	}
}

// stderrTail returns what the current stdio process wrote on stderr last.
func (s *server) stderrTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stderr == nil {
		return ""
	}
	return strings.TrimSpace(s.stderr.String())
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Tool is a tool of an MCP server, as engine.Tool.
type Tool struct {
	s      *server
	name   string // on the server
	model  string // what the model calls it
	desc   string
	schema json.RawMessage
}

func (s *server) newTool(t *sdk.Tool) *Tool {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return &Tool{s: s, name: t.Name, desc: desc, schema: schema}
}

// Name is what the model calls the tool: SERVER__TOOL.
func (t *Tool) Name() string { return t.model }

// Qualified is how hooks list the tool: SERVER.TOOL.
func (t *Tool) Qualified() string { return t.s.cfg.Name + "." + t.name }

// Server is the name of the tool's server.
func (t *Tool) Server() string { return t.s.cfg.Name }

// Description is the server's description of the tool.
func (t *Tool) Description() string { return t.desc }

// Schema is the tool's input schema, as the server gave it.
func (t *Tool) Schema() json.RawMessage { return t.schema }

// Call calls the tool on its server, starting the server again if it
// exited. A result the server marks as an error is returned as an error,
// for the model to see.
func (t *Tool) Call(ctx context.Context, _ *engine.ToolEnv, args json.RawMessage) (string, error) {
	sess, _, err := t.s.session(ctx)
	if err != nil {
		return "", err
	}
	callCtx, cancel := context.WithTimeout(ctx, t.s.cfg.CallTimeout)
	defer cancel()
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := sess.CallTool(callCtx, &sdk.CallToolParams{Name: t.name, Arguments: args})
	if err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		t.s.restart(sess)
		return "", fmt.Errorf("mcp %s: no answer within call_timeout (%s): the server is stopped and started again for the next call", t.Qualified(), t.s.cfg.CallTimeout)
	}
	if err != nil {
		msg := fmt.Sprintf("mcp %s: %v", t.Qualified(), err)
		if t.s.ended(sess) {
			msg = fmt.Sprintf("mcp server %s stopped during the call (it is started again for the next call): %v", t.s.cfg.Name, err)
			if e := t.s.stderrTail(); e != "" {
				msg += "; stderr: " + e
			}
		}
		return "", errors.New(msg)
	}
	text := renderContent(res)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error"
		}
		return "", errors.New(text)
	}
	return text, nil
}

// renderContent turns a tool result into text for the model.
func renderContent(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch x := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, x.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", x.MIMEType, len(x.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", x.MIMEType, len(x.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s %s]", x.Name, x.URI))
		case *sdk.EmbeddedResource:
			if x.Resource != nil && x.Resource.Text != "" {
				parts = append(parts, x.Resource.Text)
			} else if x.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", x.Resource.URI))
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

var notToolChar = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// nameTools gives each tool of server a name valid for the
// chat-completions API: SERVER__TOOL, with other characters replaced by
// '_', cut to 64 characters, and made unique with a numeric suffix.
func nameTools(server string, tools []*Tool) {
	sort.Slice(tools, func(i, j int) bool { return tools[i].name < tools[j].name })
	used := map[string]bool{}
	for _, t := range tools {
		base := server + "__" + notToolChar.ReplaceAllString(t.name, "_")
		if len(base) > 64 {
			base = base[:64]
		}
		name := base
		for n := 2; used[name]; n++ {
			suffix := fmt.Sprintf("_%d", n)
			name = base[:min(len(base), 64-len(suffix))] + suffix
		}
		used[name] = true
		t.model = name
	}
}
