// Package daemon builds and runs the whole hookd daemon from its
// settings, in any process: New takes the database's lock, opens the
// store and loads hooks.d; Run starts the engine, the file watches, live
// reload, retention, notifications and the control API (package
// api/server) and serves until its context ends. cmd/hookd's `serve`
// is New and Run with the process's signals; tests build daemons in
// process the same way. Open builds the engine alone, without serving,
// for the commands that run hooks without a daemon.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/api/server"
	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/metrics"
	"github.com/hookd/hookd/notify"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/tracing"
)

// notifyDrain is how long a stopping daemon keeps delivering the
// notifications it queued.
const notifyDrain = 5 * time.Second

// daemonEvent publishes one of the daemon's own events (hookd.started,
// hookd.stopping) to the hooks whose event trigger matches it and to the
// live stream. It is not stored in the event log: it says what this
// process did, and is not dispatched again after a crash.
func daemonEvent(eng *engine.Engine, clk clock.Clock, log *slog.Logger, typ string, info *engine.DaemonInfo) {
	data := map[string]any{"pid": info.PID, "hooks": info.Hooks}
	if info.Signal != "" {
		data["signal"] = info.Signal
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := &engine.Event{ID: engine.NewID(), Type: typ, Source: "hookd", Data: data, Time: clk.Now()}
	if _, err := eng.Dispatch(ctx, ev); err != nil {
		log.Error("publish daemon event", "event", typ, "err", err)
	}
}

// Options are how a daemon runs, beyond its settings.
type Options struct {
	Log *slog.Logger // the daemon's log; nil: text on stderr
	// Settings reads hookd.yaml again, with the overrides the daemon was
	// started with, when the file changes (live reload); nil: the
	// settings are not reloaded.
	Settings func() (*config.Daemon, error)
	// Getenv reads the environment the API token is taken from; nil:
	// the process's.
	Getenv func(string) string
}

// Daemon is one hookd daemon: its engine on a locked database, and
// everything Run starts around it.
type Daemon struct {
	d      *config.Daemon
	log    *slog.Logger
	load   func() (*config.Daemon, error)
	token  string
	getenv func(string) string
	l      *Local

	abort     chan struct{} // closed by Abort
	abortOnce sync.Once
	closed    bool
}

// Signal is the cause a stop of Run's context gives when a signal
// stopped the daemon: the daemon:stop payload and the log name it.
type Signal struct{ os.Signal }

func (s *Signal) Error() string { return "signal: " + s.Signal.String() }

// ErrAborted is what Run returns when Abort cut its stop short: the runs
// in flight were cancelled; those still running are recorded interrupted
// at the next start. The store and the lock are left to the process's
// exit.
var ErrAborted = errors.New("forced stop: runs in flight were cancelled")

// AbandonedError is what Run returns when the database or its lock file
// was removed or replaced under the daemon: it stopped triggering and
// cancelled the runs in flight. Nothing is closed by path (Close does
// nothing): the socket, the WAL and the lock file at those paths may by
// now belong to another hookd, and closing the last connection to the
// old database would delete the WAL file at its path. The process should
// exit.
type AbandonedError struct{ Err error }

func (e *AbandonedError) Error() string {
	return "the database was replaced under hookd: " + e.Err.Error()
}

func (e *AbandonedError) Unwrap() error { return e.Err }

// New checks the API settings of d, takes the database's lock — waiting,
// until ctx ends, for a hookd command run without a daemon to let it go —
// opens the store, loads hooks.d and builds the engine. Nothing runs
// until Run; Close releases what New took.
func New(ctx context.Context, d *config.Daemon, o Options) (*Daemon, error) {
	dm := &Daemon{d: d, log: o.Log, load: o.Settings, abort: make(chan struct{})}
	if dm.log == nil {
		dm.log = NewLogger(d.LogFormat, os.Stderr, slog.LevelInfo)
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	dm.getenv = getenv
	// The TCP API needs its token before anything starts.
	if d.Listen != "" {
		var err error
		if dm.token, err = server.Token(d, getenv); err != nil {
			return nil, err
		}
		if err := server.CheckListen(d, dm.token); err != nil {
			return nil, err
		}
	}
	if err := createHooksDir(d, dm.log); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	l, err := Open(ctx, d, store.Daemon, dm.log, false)
	if err != nil {
		if errors.Is(err, engine.ErrLocked) || ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("start: %w", err)
	}
	dm.l = l
	return dm, nil
}

// createHooksDir creates the default hooks directory when it is missing
// (Thinkroid created its extensions directory), mode 0755 whatever the
// umask, and logs it. A directory hookd.yaml or --hooks named is left
// alone: LoadReport refuses it when it does not exist, since a name that
// does not exist is usually a typo.
func createHooksDir(d *config.Daemon, log *slog.Logger) error {
	if !d.HooksDirDefault {
		return nil
	}
	if _, err := os.Lstat(d.HooksDir); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.Mkdir(d.HooksDir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // another hookd made it first
		}
		return fmt.Errorf("create the hooks directory: %w", err)
	}
	if err := os.Chmod(d.HooksDir, 0o755); err != nil { // the umask narrowed Mkdir's mode
		return fmt.Errorf("create the hooks directory: %w", err)
	}
	log.Info("created the hooks directory: it did not exist", "dir", d.HooksDir)
	return nil
}

// Engine is the daemon's engine.
func (dm *Daemon) Engine() *engine.Engine { return dm.l.Engine }

// Socket is the path of the control API's unix socket.
func (dm *Daemon) Socket() string { return api.SocketPath(dm.d.DB) }

// Abort cuts a stop under way short (the second signal): the runs in
// flight are cancelled, and Run returns ErrAborted.
func (dm *Daemon) Abort() { dm.abortOnce.Do(func() { close(dm.abort) }) }

// Close releases what New took: the engine, the MCP servers, the store
// and the lock. After Run returned an *AbandonedError it does nothing.
func (dm *Daemon) Close() {
	if !dm.closed {
		dm.closed = true
		dm.l.Close()
	}
}

// Run starts the daemon and serves until ctx ends; then it stops: no new
// runs, and the runs in flight get the grace of hookd.yaml. It returns
// nil after a stop, ErrAborted after Abort, an *AbandonedError when the
// database was replaced under it, or the error that kept it from
// starting.
func (dm *Daemon) Run(ctx context.Context) error {
	d, l, log := dm.d, dm.l, dm.log
	// The database frees the pages pruning empties; one VACUUM converts a
	// database made before, before anything runs.
	vstart := l.Clock.Mono()
	if l.SQLite == nil {
		// PostgreSQL: the server vacuums.
	} else if ran, err := l.SQLite.EnableIncrementalVacuum(context.Background()); err != nil {
		return fmt.Errorf("start: %w", err)
	} else if ran {
		log.Info("database converted to incremental vacuum (once)", "took", clock.Since(l.Clock, vstart).Round(time.Millisecond))
	}

	// Observers subscribe before the engine starts, so they see its first
	// events (catch-up runs).
	m := metrics.New(l.Engine, d.OverdueGrace, 0)
	l.Engine.Subscribe(m.Observe)
	notifier := notify.New(notify.Options{Targets: d.Notify, Logger: log, Count: m.Notification, Note: l.Engine.NoteRun,
		Lifecycle: l.Engine.Lifecycle(), Clock: l.Clock})
	notifier.SetHooks(l.Hooks)
	notifier.Start()
	l.Engine.Subscribe(notifier.Observe)
	if d.OTel.Enabled(dm.getenv) {
		x, err := tracing.New(context.Background(), tracing.Options{Endpoint: d.OTel.Endpoint, Headers: d.OTel.Headers,
			Content: d.OTel.Content, Service: d.OTel.ServiceName, Node: d.Node.Name, Dropped: m.TraceDropped, Log: log})
		if err != nil {
			return fmt.Errorf("start: %w", err)
		}
		l.Engine.Subscribe(x.Observe)
		log.Info("runs are sent as OpenTelemetry traces", "endpoint", orEnv(d.OTel.Endpoint, "OTEL_EXPORTER_OTLP_ENDPOINT"), "content", d.OTel.Content)
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), notifyDrain)
			defer cancel()
			if err := x.Shutdown(ctx); err != nil {
				log.Warn("send the last traces", "err", err)
			}
		}()
	}
	forced := false
	defer func() {
		if forced {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), notifyDrain)
		defer cancel()
		notifier.Stop(ctx)
	}()

	// daemon:start: the hooks are loaded, nothing has been triggered yet.
	daemon := &engine.DaemonInfo{PID: os.Getpid(), Hooks: len(l.Hooks)}
	l.Engine.Lifecycle().Call(context.Background(), engine.PointDaemonStart, &engine.Payload{Daemon: daemon})
	if err := l.Engine.Start(context.Background()); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	// Hook files that did not load stay listed, with their errors.
	if err := l.Engine.SetBroken(context.Background(), l.broken); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	// Events accepted but not dispatched when the last daemon stopped go
	// first, before the API accepts new ones.
	if _, err := l.Engine.DispatchPending(context.Background()); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	// File watches, and live reload of the hooks directory (reload.go).
	// History is pruned in the background (prune.go).
	onHooks := []func([]*engine.Hook){notifier.SetHooks}
	pr := newPruner(l.Store, d, l.Hooks, log, m.Pruned, l.Clock)
	pr.Start()
	defer pr.Stop()
	onHooks = append(onHooks, pr.SetHooks)
	rl, err := startReloader(d, l, log, onHooks...)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer rl.stop()
	if dm.load != nil {
		sr := &settingsReloader{load: dm.load, llm: l.llm, targets: notifier.SetTargets, log: log, clock: l.Clock,
			creds: CredentialEnv(d), cur: d, lifecycle: l.Engine.Lifecycle(), maxConc: func(n int) {
				// Lowering it cancels nothing; new starts wait.
				if err := l.Engine.SetMaxConcurrent(context.Background(), n); err != nil {
					log.Error("hookd.yaml: max_concurrent not applied", "err", err)
				}
			}}
		if err := rl.watchSettings(d.SettingsPath, sr); err != nil {
			return fmt.Errorf("start: watch %s: %w", d.SettingsPath, err)
		}
	}

	abs, err := filepath.Abs(d.DB)
	if err != nil {
		return err
	}
	apiSrv, err := server.New(server.Options{
		Engine: l.Engine, Store: l.Store, Feed: l.feed, Metrics: m, DB: abs, Log: log, Grace: d.OverdueGrace,
		Pruner: pr, Cluster: server.NodesOf(l.member), Token: dm.token, DashboardHosts: d.DashboardHosts, Clock: l.Clock,
	})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	sock := dm.Socket()
	srv, err := apiSrv.ServeUnix(sock)
	if err != nil {
		return err
	}
	servers := []*http.Server{srv}
	defer func() {
		if forced {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, s := range servers {
			s.Shutdown(ctx)
		}
		os.Remove(sock)
	}()
	attrs := []any{"hooks", len(l.Hooks), "dir", d.HooksDir, "db", DatabaseName(d), "socket", sock, "max_concurrent", d.MaxConcurrent}
	if l.member != nil {
		self, scheduler := l.Engine.Scheduler()
		attrs = append(attrs, "node", l.member.Node(), "node_max_concurrent", l.member.Capacity(),
			"heartbeat_timeout", l.member.Timeout(), "schedules", self, "scheduler", scheduler)
	}
	if d.Listen != "" {
		tsrv, addr, err := apiSrv.ServeTCP(d.Listen, dm.token)
		if err != nil {
			return err
		}
		servers = append(servers, tsrv)
		attrs = append(attrs, "listen", addr.String())
	}
	log.Info("hookd serving", attrs...)
	daemonEvent(l.Engine, l.Clock, log, engine.EventDaemonStarted, daemon)

	select {
	case <-ctx.Done():
	case err := <-l.Engine.Failed():
		forced = true
		dm.closed = true // nothing is closed by path
		dm.abandon(err)
		return &AbandonedError{Err: err}
	}
	// daemon:stop and hookd.stopping come before the engine stops
	// triggering: a hook on hookd.stopping runs, within the grace.
	stopInfo := &engine.DaemonInfo{PID: os.Getpid(), Hooks: len(l.Hooks)}
	var sig *Signal
	if errors.As(context.Cause(ctx), &sig) {
		stopInfo.Signal = sig.String()
	}
	l.Engine.Lifecycle().Call(context.Background(), engine.PointDaemonStop, &engine.Payload{Daemon: stopInfo})
	daemonEvent(l.Engine, l.Clock, log, engine.EventDaemonStopping, stopInfo)
	log.Info("stopping: no new runs; waiting for runs in flight (signal again to force)", "signal", stopInfo.Signal, "grace", d.Grace)
	go rl.stop()   // no more reloads or file-change fires (not in the way of the engine's stop)
	apiSrv.Close() // end the live streams
	done := make(chan struct{})
	go func() { l.Engine.Stop(); close(done) }()
	select {
	case <-done:
		log.Info("hookd stopped")
		return nil
	case <-dm.abort:
		// Cancel the runs (their process groups are killed) and give them
		// a moment to be recorded; what is still running then is marked
		// interrupted at the next start.
		forced = true
		log.Warn("forced stop: cancelling runs in flight")
		l.Engine.Abort()
		t := l.Clock.NewTimer(3 * time.Second)
		select {
		case <-done:
		case <-t.C():
			log.Warn("runs still in flight will be recorded as interrupted at the next start")
		}
		t.Stop()
		os.Remove(sock)
		return ErrAborted
	}
}

// abandon cancels the runs in flight of a daemon whose database or lock
// file was replaced under it (see AbandonedError), and waits a moment for
// them to end.
func (dm *Daemon) abandon(err error) {
	dm.log.Error("hookd exits: cancelling the runs in flight; start hookd again to run on the database now at its path",
		"err", err)
	dm.l.Engine.Abort()
	done := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		dm.l.Engine.Shutdown(ctx)
		close(done)
	}()
	t := dm.l.Clock.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		dm.log.Warn("runs still in flight are abandoned")
	}
}

// orEnv is v, or "$NAME" when v is empty (the setting comes from there).
func orEnv(v, name string) string {
	if v != "" {
		return v
	}
	return "$" + name
}
