package daemon

import (
	"context"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/triggers"
)

// swapLLM is the engine's model client. hookd.yaml's llm: and
// mcp_servers: are read again on SIGHUP and when the file changes; the
// client built from them replaces the one in use, and a model stage uses
// the client in place when it starts.
type swapLLM struct {
	cur     atomic.Pointer[model]
	mu      sync.Mutex
	retired []*model // replaced; their MCP servers may serve runs in flight until hookd stops
}

func newSwapLLM(m *model) *swapLLM {
	s := &swapLLM{}
	s.cur.Store(m)
	return s
}

// Complete runs the model stage with the client in place.
func (s *swapLLM) Complete(ctx context.Context, req *engine.LLMRequest) error {
	return s.cur.Load().llm.Complete(ctx, req)
}

// swap puts m in place.
func (s *swapLLM) swap(m *model) {
	old := s.cur.Swap(m)
	s.mu.Lock()
	s.retired = append(s.retired, old)
	s.mu.Unlock()
}

// close stops the MCP servers of every client, in place or replaced.
func (s *swapLLM) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.retired {
		m.close()
	}
	s.retired = nil
	s.cur.Load().close()
}

// liveSettings are the keys of hookd.yaml a running daemon takes again;
// the others take effect at the next start.
var liveSettings = []string{"llm", "mcp_servers", "notify", "max_concurrent", "lifecycle"}

// settingsKeys names each setting with its value, for comparing two
// readings of hookd.yaml.
func settingsKeys(d *config.Daemon) map[string]any {
	return map[string]any{
		"llm": d.LLM, "mcp_servers": d.MCPServers, "notify": d.Notify,
		"hooks_dir": d.HooksDir, "db": d.DB, "max_concurrent": d.MaxConcurrent, "tick": d.Tick,
		"queue_size": d.QueueSize, "grace": d.Grace, "default_timeout": d.DefaultTimeout,
		"max_catchup": d.MaxCatchup, "log_format": d.LogFormat, "listen": d.Listen, "token_env": d.TokenEnv,
		"token_file": d.TokenFile, "overdue_grace": d.OverdueGrace, "prompt_value_max": d.PromptValueMax,
		"retention": []any{d.Retention, d.PruneEvery}, "allow_insecure_hooks": d.AllowInsecureHooks,
		"budget": d.Budget, "sandbox": d.SandboxOff, "lifecycle": d.Sequential,
	}
}

// settingsDiff lists the settings that differ between old and new: those
// a running daemon takes (live) and those that wait for a restart.
func settingsDiff(old, new *config.Daemon) (live, restart []string) {
	a, b := settingsKeys(old), settingsKeys(new)
	for k, v := range a {
		if reflect.DeepEqual(v, b[k]) {
			continue
		}
		if slices.Contains(liveSettings, k) {
			live = append(live, k)
		} else {
			restart = append(restart, k)
		}
	}
	slices.Sort(live)
	slices.Sort(restart)
	return live, restart
}

// settingsReloader applies a new reading of hookd.yaml to a running
// daemon: the model client (llm:, mcp_servers:) and the notifier's
// targets (notify:). A file that does not load, or that names a
// credential variable the daemon was not started with, changes nothing:
// the settings in use stay, and the log says why.
type settingsReloader struct {
	load    func() (*config.Daemon, error)
	llm     *swapLLM
	targets func([]engine.NotifyTarget)
	maxConc func(int) // applies max_concurrent
	// lifecycle is the engine's handler registry: lifecycle: is applied
	// to it.
	lifecycle *engine.Registry
	log       *slog.Logger
	clock     clock.Clock // the engine's, for a new model stage

	creds []string // the credential variables hookd started with (engine.Config.Credentials)

	mu  sync.Mutex
	cur *config.Daemon // the settings last applied
}

// hookOptions are the hook loading options of the settings last applied.
func (r *settingsReloader) hookOptions() config.Options {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.HookOptions()
}

func (r *settingsReloader) reload(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	nd, err := r.load()
	if err != nil {
		r.log.Error("hookd.yaml not reloaded; keeping the settings in use", "why", why, "err", err)
		return
	}
	live, restart := settingsDiff(r.cur, nd)
	if len(live) == 0 && len(restart) == 0 {
		return
	}
	known := r.creds
	var unknown []string
	for _, n := range CredentialEnv(nd) {
		if !slices.Contains(known, n) && !slices.Contains(unknown, n) {
			unknown = append(unknown, n)
		}
	}
	if len(live) > 0 && len(unknown) > 0 {
		// hookd redacts its credentials from everything a run produces and
		// keeps them from hooks' processes; the list is fixed at start.
		r.log.Error("hookd.yaml not reloaded; keeping the settings in use: it names credential variables hookd "+
			"did not start with, which it could not redact; restart hookd to use them", "why", why, "variables", unknown)
		return
	}
	if len(restart) > 0 {
		r.log.Warn("hookd.yaml: settings that take effect at the next start changed", "why", why, "settings", restart)
	}
	if len(live) == 0 {
		r.cur = nd
		return
	}
	if slices.Contains(live, "llm") || slices.Contains(live, "mcp_servers") {
		r.llm.swap(newModel(nd, r.log, r.clock))
	}
	if slices.Contains(live, "notify") {
		r.targets(nd.Notify)
	}
	if slices.Contains(live, "max_concurrent") {
		r.maxConc(nd.MaxConcurrent)
	}
	if slices.Contains(live, "lifecycle") {
		r.lifecycle.SetSequential(nd.Sequential)
	}
	r.cur = nd
	r.log.Info("hookd.yaml reloaded", "why", why, "changed", live)
}

// watchSettings re-reads hookd.yaml with sr on SIGHUP (before the hooks
// directory) and whenever the file changes.
func (rl *reloader) watchSettings(path string, sr *settingsReloader) error {
	rl.settings.Store(sr)
	spec := engine.WatchSpec{Paths: []string{path}, Debounce: hooksDirQuiet, MaxWait: 10 * hooksDirQuiet}
	return rl.watcher.WatchFunc(context.Background(), "settings file", spec, func([]triggers.Change) {
		sr.reload("hookd.yaml changed")
	})
}
