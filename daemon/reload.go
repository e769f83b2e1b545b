package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/handlers"
	"github.com/hookd/hookd/triggers"
)

// hooksDirQuiet is how long the hooks directory must be quiet before it is
// reloaded: an editor's save (a temporary file, a rename) is one reload.
const hooksDirQuiet = 200 * time.Millisecond

// reloader runs the daemon's file watcher and keeps the engine's hooks in
// step with the hooks directory: a change in the directory (seen by the
// watcher) or SIGHUP reloads it. A file that does not load keeps the
// hooks it defined before, so a typo never unschedules anything; their
// triggers are skipped (engine.GateInvalidFile) until it loads.
type reloader struct {
	d       *config.Daemon
	eng     *engine.Engine
	hs      *handlers.Set
	watcher *triggers.Watcher
	log     *slog.Logger
	onHooks []func([]*engine.Hook) // told the new hooks after each reload

	mu    sync.Mutex     // one reload at a time
	hooks []*engine.Hook // the hooks the engine has

	settings atomic.Pointer[settingsReloader] // hookd.yaml, re-read on SIGHUP (watchSettings)

	sigs     chan os.Signal
	done     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// startReloader starts the file watcher on the engine's hooks, watches the
// hooks directory and listens for SIGHUP. onHooks are told the hooks after
// each reload (the notifier's per-hook targets, for one).
func startReloader(d *config.Daemon, l *Local, log *slog.Logger, onHooks ...func([]*engine.Hook)) (*reloader, error) {
	ctx := context.Background()
	rl := &reloader{
		d: d, eng: l.Engine, hs: l.hs, log: log, onHooks: onHooks, hooks: l.Hooks,
		sigs: make(chan os.Signal, 1), done: make(chan struct{}),
	}
	var exclude []string
	if db, err := filepath.Abs(d.DB); err == nil {
		// The database with its journal and lock, and the socket: a watch
		// of the project would otherwise fire on every run.
		exclude = append(exclude, db)
		if sock, err := filepath.Abs(api.SocketPath(d.DB)); err == nil {
			exclude = append(exclude, sock)
		}
	}
	rl.watcher = triggers.NewWatcher(triggers.WatcherOptions{Target: l.Engine, Snapshots: l.Store, Logger: log, Exclude: exclude})
	if err := rl.watcher.Start(ctx); err != nil {
		return nil, err
	}
	if err := rl.watcher.SetHooks(ctx, l.Hooks); err != nil {
		rl.watcher.Stop()
		return nil, err
	}
	dir, err := filepath.Abs(d.HooksDir)
	if err != nil {
		rl.watcher.Stop()
		return nil, err
	}
	spec := engine.WatchSpec{Paths: []string{dir}, Extensions: []string{".yaml", ".yml", ".json"},
		Debounce: hooksDirQuiet, MaxWait: 10 * hooksDirQuiet}
	if err := rl.watcher.WatchFunc(ctx, "hooks directory", spec, func(changes []triggers.Change) {
		rl.reload("hooks directory changed", "files", len(changes))
	}); err != nil {
		rl.watcher.Stop()
		return nil, err
	}
	signal.Notify(rl.sigs, syscall.SIGHUP)
	rl.wg.Add(1)
	go func() {
		defer rl.wg.Done()
		for {
			select {
			case <-rl.sigs:
				if sr := rl.settings.Load(); sr != nil {
					sr.reload("SIGHUP")
				}
				rl.reload("SIGHUP")
			case <-rl.done:
				return
			}
		}
	}()
	return rl, nil
}

// stop ends reloading and file watching. Safe to call more than once.
func (rl *reloader) stop() {
	rl.stopOnce.Do(func() {
		signal.Stop(rl.sigs)
		close(rl.done)
		rl.wg.Wait()
		rl.watcher.Stop()
	})
}

// reload loads the hooks directory again and hands the result to the
// engine, the watcher and the listeners.
func (rl *reloader) reload(why string, attrs ...any) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	select {
	case <-rl.done:
		return
	default:
	}
	opts := rl.d.HookOptions()
	if sr := rl.settings.Load(); sr != nil {
		opts.MCPServers = sr.hookOptions().MCPServers // hookd.yaml's mcp_servers are taken live
	}
	hooks, hs, errs, broken, kept, ok := loadForReload(rl.d.HooksDir, opts, rl.hooks, rl.log)
	if !ok {
		return
	}
	if rl.hs != nil {
		bad := map[string]bool{}
		for _, e := range errs {
			if ce, ok := errors.AsType[*config.Error](e); ok {
				bad[ce.File] = true
			}
		}
		rl.hs.Apply(hs, bad)
	}
	ctx := context.Background()
	rep, err := rl.eng.Reload(ctx, hooks)
	if errors.Is(err, engine.ErrStopped) {
		return
	}
	if err != nil && rep.Empty() {
		rl.log.Error("reload hooks: nothing changed", "err", err)
		return
	}
	if err != nil {
		rl.log.Error("reload hooks", "err", err)
	}
	rl.hooks = hooks
	if err := rl.eng.SetBroken(ctx, broken); err != nil && !errors.Is(err, engine.ErrStopped) {
		rl.log.Error("reload hooks: the files that did not load", "err", err)
	}
	if err := rl.watcher.SetHooks(ctx, hooks); err != nil && !errors.Is(err, triggers.ErrWatcherStopped) {
		rl.log.Error("reload hooks: file watches", "err", err)
	}
	for _, f := range rl.onHooks {
		f(hooks)
	}
	level := slog.LevelInfo
	if rep.Empty() && len(errs) == 0 && why != "SIGHUP" {
		level = slog.LevelDebug
	}
	rl.log.Log(ctx, level, "hooks reloaded", append([]any{"why", why, "added", rep.Added, "changed", rep.Changed,
		"removed", rep.Removed, "unchanged", rep.Unchanged, "cancelled_runs", rep.Cancelled,
		"kept_after_errors", kept, "errors", len(errs)}, attrs...)...)
}

// loadForReload loads the hooks directory. For a file that does not load,
// the hooks it defined before (in current) stay, and the error is logged
// with its file and line. ok is false when the directory cannot be read at
// all; then nothing changes.
func loadForReload(dir string, opts config.Options, current []*engine.Hook, log *slog.Logger) (hooks []*engine.Hook, hs []*config.Handler, errs []error, broken []engine.BrokenFile, kept []string, ok bool) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		log.Error("reload hooks: the hooks directory cannot be read; keeping every hook", "dir", dir, "err", err)
		return nil, nil, nil, nil, nil, false
	}
	l := config.LoadDirReport(dir, opts)
	hooks, hs, errs, broken = l.Hooks, l.Handlers, l.Errs, l.Broken
	bad := map[string]bool{}
	for _, e := range errs {
		var ce *config.Error
		if !errors.As(e, &ce) || ce.File == dir {
			log.Error("reload hooks: keeping every hook", "err", e.Error())
			return nil, nil, nil, nil, nil, false
		}
		bad[ce.File] = true
	}
	loaded := map[string]bool{}
	for _, h := range hooks {
		loaded[h.Name] = true
	}
	for _, h := range current {
		if bad[h.Source.File] && !loaded[h.Name] {
			hooks = append(hooks, h)
			loaded[h.Name] = true
			kept = append(kept, h.Name)
		}
	}
	for _, e := range errs {
		var ce *config.Error
		errors.As(e, &ce)
		msg := "hook file not loaded"
		for _, h := range current {
			if h.Source.File == ce.File && loaded[h.Name] {
				msg = "hook file not loaded; the previous version keeps its schedule, each trigger skipped (invalid_file) until the file loads"
				break
			}
		}
		log.Error(msg, "err", e.Error())
	}
	return hooks, hs, errs, broken, kept, true
}
