// Package mcp connects hookd to Model Context Protocol servers declared in
// hookd.yaml (mcp_servers:), through the official Go SDK: stdio servers
// (a command hookd starts) and streamable-HTTP servers (a URL plus
// headers). Servers start when a run first needs them, are reused by
// later runs, and are started again after they exit or crash. A server
// that fails to start fails only the runs that list its tools, with its
// stderr in the error.
//
// A hook lists a server's tools as SERVER.TOOL or a glob over the whole
// name ('.' separating, glob.Dot): SERVER.* for its tools whose names
// hold no dot, SERVER.** for all of them;
// the model sees each as SERVER__TOOL, made valid for the chat-completions
// API (^[a-zA-Z0-9_-]{1,64}$), and the Manager maps it back.
package mcp

import (
	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/redact"
	"github.com/hookd/hookd/sandbox"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hookd/hookd/internal/glob"

	"github.com/hookd/hookd/engine"
)

// ServerConfig is one MCP server. Exactly one of Command and URL is set.
type ServerConfig struct {
	Name    string
	Command []string          // stdio: program and arguments, run without a shell
	Env     map[string]string // stdio: the server's variables; ${VAR} expands from Options.Environ
	Dir     string            // stdio: working directory
	URL     string            // streamable HTTP endpoint
	Headers map[string]string // sent with every HTTP request; ${VAR} expands from Options.Environ
	// StartTimeout bounds starting and listing tools (default 30s);
	// CallTimeout bounds one tool call (default 2m).
	StartTimeout time.Duration
	CallTimeout  time.Duration
	// Sandbox contains a stdio server (its Workdir defaults to Dir); a
	// stdio server without one does not start, unless the process's
	// sandbox is off.
	Sandbox *sandbox.Policy
}

// Options configure a Manager.
type Options struct {
	// Environ is hookd's environment (default os.Environ()): the source
	// of ${VAR} in env and headers. A stdio server gets its allowlisted
	// part (engine.ChildEnv) and its own env, nothing else.
	Environ []string
	Logger  *slog.Logger
	// Redactor replaces hookd's credentials in what a server writes on
	// stderr before it is logged or reported; nil redacts nothing.
	Redactor *redact.Redactor
	// HTTPClient is the base client of streamable-HTTP servers (default
	// a client on http.DefaultTransport).
	HTTPClient *http.Client
	// RetryAfter is how long a server that failed to start is not tried
	// again; runs in that time get the same error (default 2s).
	RetryAfter time.Duration
	// StopTimeout is how long a stdio server gets to exit after its
	// stdin is closed before it is signalled (default 2s).
	StopTimeout time.Duration
	// Clock times the waits (a start's retry, a stop) (default
	// clock.System): the engine's clock.
	Clock clock.Clock
}

// Manager holds the MCP servers of one hookd process. It is safe for
// concurrent use.
type Manager struct {
	opts    Options
	servers map[string]*server
	names   []string
}

// ErrClosed is returned by a Manager after Close.
var ErrClosed = errors.New("mcp: manager closed")

// NewManager makes a manager for servers; nothing starts yet.
func NewManager(servers []ServerConfig, opts Options) (*Manager, error) {
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = 2 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 2 * time.Second
	}
	m := &Manager{opts: opts, servers: map[string]*server{}}
	for _, c := range servers {
		switch {
		case c.Name == "" || strings.Contains(c.Name, ".") || engine.IsToolGlob(c.Name) || len(c.Name) > 32:
			return nil, fmt.Errorf("mcp: server name %q is not valid", c.Name)
		case m.servers[c.Name] != nil:
			return nil, fmt.Errorf("mcp: server %q declared twice", c.Name)
		case (len(c.Command) == 0) == (c.URL == ""):
			return nil, fmt.Errorf("mcp: server %q needs a command or a url (one of them)", c.Name)
		}
		if c.StartTimeout <= 0 {
			c.StartTimeout = 30 * time.Second
		}
		if c.CallTimeout <= 0 {
			c.CallTimeout = 2 * time.Minute
		}
		m.servers[c.Name] = &server{cfg: c, m: m, log: opts.Logger.With("mcp_server", c.Name)}
		m.names = append(m.names, c.Name)
	}
	sort.Strings(m.names)
	return m, nil
}

// Names lists the servers, sorted.
func (m *Manager) Names() []string { return append([]string(nil), m.names...) }

// Tools returns every tool of a server, starting it if needed.
func (m *Manager) Tools(ctx context.Context, name string) ([]*Tool, error) {
	s, err := m.server(name)
	if err != nil {
		return nil, err
	}
	_, tools, err := s.session(ctx)
	return tools, err
}

// Resolve implements agent.ToolServers: entry is SERVER.TOOL, where TOOL
// may be a glob (SERVER.*). A glob may match nothing; a plain name must
// match a tool.
func (m *Manager) Resolve(ctx context.Context, entry string) ([]engine.Tool, error) {
	name, pat, ok := strings.Cut(entry, ".")
	if !ok || pat == "" {
		return nil, fmt.Errorf("want SERVER.TOOL or SERVER.*, got %q", entry)
	}
	if _, err := glob.Compile(entry, glob.Dot); err != nil {
		return nil, err
	}
	tools, err := m.Tools(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []engine.Tool
	for _, t := range tools {
		if engine.GrantsTool(entry, t.Qualified()) {
			out = append(out, t)
		}
	}
	if len(out) == 0 && !engine.IsToolGlob(entry) {
		names := make([]string, len(tools))
		for i, t := range tools {
			names[i] = t.name
		}
		return nil, fmt.Errorf("mcp server %s has no tool %q (it has: %s)", name, pat, strings.Join(names, ", "))
	}
	return out, nil
}

func (m *Manager) server(name string) (*server, error) {
	s := m.servers[name]
	if s == nil {
		if len(m.names) == 0 {
			return nil, fmt.Errorf("no MCP server %q: hookd.yaml declares no mcp_servers", name)
		}
		return nil, fmt.Errorf("no MCP server %q in hookd.yaml (declared: %s)", name, strings.Join(m.names, ", "))
	}
	return s, nil
}

// Close stops every server. It is safe to call twice.
func (m *Manager) Close() error {
	var wg sync.WaitGroup
	errs := make([]error, len(m.names))
	for i, n := range m.names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.servers[n].close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
