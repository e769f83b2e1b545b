package daemon

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/llm"
	"github.com/hookd/hookd/mcp"
	"github.com/hookd/hookd/process"
	"github.com/hookd/hookd/redact"
	"github.com/hookd/hookd/sandbox"
	"github.com/hookd/hookd/templates"
	_ "github.com/hookd/hookd/tools" // registers the built-in tools
	"github.com/hookd/hookd/triggers"
)

// model is the model stage of a hookd process: the agent over the LLM
// client, the MCP servers it may start, and the paths no tool may write.
type model struct {
	llm       engine.LLM
	mcp       *mcp.Manager
	hooksDir  string
	protected []string
}

// newModel builds the model stage from the settings, on the engine's
// clock. MCP servers start only when a run needs them.
func newModel(d *config.Daemon, log *slog.Logger, clk clock.Clock) *model {
	m := &model{hooksDir: absPath(d.HooksDir), protected: protectedPaths(d)}
	opts := agent.Options{Defaults: d.LLM, Clock: clk}
	if len(d.MCPServers) > 0 {
		mgr, err := mcp.NewManager(MCPConfigs(d), mcp.Options{Logger: log, Clock: clk,
			Redactor: redact.New(CredentialEnv(d), os.Environ())})
		if err != nil {
			log.Error("mcp servers not available", "err", err)
		} else {
			m.mcp, opts.Servers = mgr, mgr
		}
	}
	opts.Chat = llm.New(llm.Options{Defaults: d.LLM, Logger: log, Clock: clk})
	m.llm = agent.New(opts)
	return m
}

// protectedPaths lists hookd's own paths, which no tool may write or
// read and no writes: may touch (config.Daemon.OwnPaths).
func protectedPaths(d *config.Daemon) []string { return d.OwnPaths() }

// close stops the MCP servers that were started.
func (m *model) close() {
	if m != nil && m.mcp != nil {
		m.mcp.Close()
	}
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func MCPConfigs(d *config.Daemon) []mcp.ServerConfig {
	out := make([]mcp.ServerConfig, len(d.MCPServers))
	for i, s := range d.MCPServers {
		out[i] = mcp.ServerConfig{Name: s.Name, Command: s.Command, Env: s.Env, Dir: s.Dir, URL: s.URL,
			Headers: s.Headers, StartTimeout: s.StartTimeout, CallTimeout: s.CallTimeout,
			Sandbox: processPolicy(d, s.Sandbox, s.Dir, "mcp:"+s.Name)}
	}
	return out
}

// processPolicy is the sandbox policy of a process hookd starts outside
// a hook's steps (an MCP stdio server, a handler's command): what its
// sandbox: declares, in dir, with hookd's own files hidden; nil when it
// declares no network.
func processPolicy(d *config.Daemon, ps *config.ProcessSandbox, dir, key string) *sandbox.Policy {
	if ps == nil || ps.Network == nil {
		return nil
	}
	hidden := protectedPaths(d)
	if d.HooksDir != "" {
		hidden = append(hidden, absPath(d.HooksDir))
	}
	return &sandbox.Policy{Workdir: dir, Writes: ps.Writes, Network: *ps.Network, Hidden: hidden, Key: key}
}

// PromptRenderer is the prompt renderer of every engine hookd builds.
func PromptRenderer(d *config.Daemon) engine.PromptRenderer {
	return templates.New(templates.Options{MaxValueBytes: d.PromptValueMax})
}

// ReplayEngine builds the engine `hookd replay` replays recorded runs
// with (engine.Replay): the model stage, prompt renderer, sandbox and
// budgets a daemon has, over db and hooks. It is never started; close
// stops the MCP servers a replay started.
func ReplayEngine(d *config.Daemon, hooks []*engine.Hook, db engine.Store, log *slog.Logger) (eng *engine.Engine, close func(), err error) {
	sb, err := InstallSandbox(d, log)
	if err != nil {
		return nil, nil, err
	}
	clk := clock.Wall{}
	m := newModel(d, log, clk)
	eng, err = engine.New(engine.Config{
		Clock:          clk,
		LLM:            m.llm,
		HooksDir:       m.hooksDir,
		Protected:      m.protected,
		Database:       absPath(d.DB),
		Credentials:    CredentialEnv(d),
		Store:          db,
		Reap:           process.ReapGroup,
		Events:         triggers.NewEventIndex(),
		Prompt:         PromptRenderer(d),
		Logger:         log,
		DefaultTimeout: d.DefaultTimeout,
		Budget:         d.Budget,
		Manual:         true,
		Sandbox:        &sb,

		CredentialValues: CredentialValues(d),
	}, hooks)
	if err != nil {
		m.close()
		return nil, nil, err
	}
	return eng, m.close, nil
}
