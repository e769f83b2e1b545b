package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/metrics"
	"github.com/hookd/hookd/notify"
)

// notifyDrain is how long a stopping daemon keeps delivering the
// notifications it queued.
const notifyDrain = 5 * time.Second

func cmdServe(c *cli, args []string) int {
	fs := c.flags()
	logFormat := fs.String("log-format", "", "log format: text or json (default from hookd.yaml, else text)")
	_, d, code, ok := c.setup(fs, args, 0, 0)
	if !ok {
		return code
	}
	if *logFormat != "" && *logFormat != "text" && *logFormat != "json" {
		fmt.Fprintf(c.stderr, "hookd serve: --log-format must be text or json (got %q)\n", *logFormat)
		return exitUsage
	}
	if *logFormat != "" {
		d.LogFormat = *logFormat
	}
	log := newLogger(d.LogFormat, os.Stderr, slog.LevelInfo)

	// The TCP API needs its token before anything starts.
	var token string
	if d.Listen != "" {
		var err error
		if token, err = apiToken(d, os.Getenv); err != nil {
			return c.errorf("%v", err)
		}
		if err := checkListen(d, token); err != nil {
			return c.errorf("%v", err)
		}
	}

	// SIGINT or SIGTERM while waiting for the lock held by a hookd command
	// (newLocal) stops the wait, and hookd exits 0: nothing had started.
	startCtx, stopStartSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	l, err := c.newLocal(startCtx, d, log, false)
	stopStartSignals()
	// The cause is context.Canceled itself unless a signal came first (a
	// signal's cause is another error, which errors.Is reads as Canceled).
	if cause := context.Cause(startCtx); cause != context.Canceled {
		// A signal during start-up: stop before anything runs.
		if err == nil {
			l.close()
		}
		log.Info("hookd stopped before it started", "signal", cause.Error())
		return exitOK
	}
	if err != nil {
		if errors.Is(err, engine.ErrLocked) {
			return c.errorf("%v", err)
		}
		return c.errorf("start: %v", err)
	}
	defer l.close()
	// The database frees the pages pruning empties; one VACUUM converts a
	// database made before, before anything runs.
	vstart := time.Now()
	if l.db == nil {
		// PostgreSQL: the server vacuums.
	} else if ran, err := l.db.EnableIncrementalVacuum(context.Background()); err != nil {
		return c.errorf("start: %v", err)
	} else if ran {
		log.Info("database converted to incremental vacuum (once)", "took", time.Since(vstart).Round(time.Millisecond))
	}

	// Observers subscribe before the engine starts, so they see its first
	// events (catch-up runs).
	m := metrics.New(l.eng, d.OverdueGrace, 0)
	l.eng.Subscribe(m.Observe)
	notifier := notify.New(notify.Options{Targets: d.Notify, Logger: log, Count: m.Notification, Lifecycle: l.eng.Lifecycle()})
	notifier.SetHooks(l.hooks)
	notifier.Start()
	l.eng.Subscribe(notifier.Observe)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), notifyDrain)
		defer cancel()
		notifier.Stop(ctx)
	}()

	// daemon:start: the hooks are loaded, nothing has been triggered yet.
	daemon := &engine.DaemonInfo{PID: os.Getpid(), Hooks: len(l.hooks)}
	l.eng.Lifecycle().Call(context.Background(), engine.PointDaemonStart, &engine.Payload{Daemon: daemon})
	if err := l.eng.Start(context.Background()); err != nil {
		return c.errorf("start: %v", err)
	}
	// Events accepted but not dispatched when the last daemon stopped go
	// first, before the API accepts new ones.
	if _, err := l.eng.DispatchPending(context.Background()); err != nil {
		return c.errorf("start: %v", err)
	}
	// File watches, and live reload of the hooks directory (reload.go).
	// History is pruned in the background (prune.go).
	onHooks := []func([]*engine.Hook){notifier.SetHooks}
	pr := newPruner(l.st, d, l.hooks, log, m.Pruned)
	pr.Start()
	defer pr.Stop()
	onHooks = append(onHooks, pr.SetHooks)
	rl, err := startReloader(d, l, log, onHooks...)
	if err != nil {
		return c.errorf("start: %v", err)
	}
	defer rl.stop()
	sr := &settingsReloader{load: c.settings, llm: l.llm, targets: notifier.SetTargets, log: log,
		creds: credentialEnv(d), cur: d}
	if err := rl.watchSettings(d.SettingsPath, sr); err != nil {
		return c.errorf("start: watch %s: %v", d.SettingsPath, err)
	}

	abs, err := filepath.Abs(d.DB)
	if err != nil {
		return c.errorf("%v", err)
	}
	api := &apiServer{
		eng: l.eng, st: l.st, evlog: l.st, feed: l.feed, metrics: m, db: abs, log: log,
		grace: d.OverdueGrace, started: time.Now(), closing: make(chan struct{}), pruner: pr, cluster: nodesOf(l.member),
	}
	if err := newDashboards(dashSource{eng: l.eng, db: l.st, grace: d.OverdueGrace, nodes: api.cluster}, token, d.DashboardHosts, api); err != nil {
		return c.errorf("start: %v", err)
	}
	sock := socketPath(d.DB)
	srv, err := api.serveUnix(sock)
	if err != nil {
		return c.errorf("%v", err)
	}
	servers := []*http.Server{srv}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, s := range servers {
			s.Shutdown(ctx)
		}
		os.Remove(sock)
	}()
	attrs := []any{"hooks", len(l.hooks), "dir", d.HooksDir, "db", databaseName(d), "socket", sock, "max_concurrent", d.MaxConcurrent}
	if l.member != nil {
		self, scheduler := l.eng.Scheduler()
		attrs = append(attrs, "node", l.member.Node(), "node_max_concurrent", l.member.Capacity(),
			"heartbeat_timeout", l.member.Timeout(), "schedules", self, "scheduler", scheduler)
	}
	if d.Listen != "" {
		tsrv, addr, err := api.serveTCP(d.Listen, token)
		if err != nil {
			return c.errorf("%v", err)
		}
		servers = append(servers, tsrv)
		attrs = append(attrs, "listen", addr.String())
	}
	log.Info("hookd serving", attrs...)
	daemonEvent(l.eng, log, engine.EventDaemonStarted, daemon)

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var sig os.Signal
	select {
	case sig = <-sigs:
	case err := <-l.eng.Failed():
		abandon(l, log, err)
	}
	// daemon:stop and hookd.stopping come before the engine stops
	// triggering: a hook on hookd.stopping runs, within the grace.
	stopInfo := &engine.DaemonInfo{PID: os.Getpid(), Hooks: len(l.hooks)}
	if sig != nil {
		stopInfo.Signal = sig.String()
	}
	l.eng.Lifecycle().Call(context.Background(), engine.PointDaemonStop, &engine.Payload{Daemon: stopInfo})
	daemonEvent(l.eng, log, engine.EventDaemonStopping, stopInfo)
	log.Info("stopping: no new runs; waiting for runs in flight (signal again to force)", "signal", sig.String(), "grace", d.Grace)
	go rl.stop() // no more reloads or file-change fires (not in the way of the engine's stop)
	api.close()  // end the live streams
	done := make(chan struct{})
	go func() { l.eng.Stop(); close(done) }()
	select {
	case <-done:
		log.Info("hookd stopped")
		return exitOK
	case <-sigs:
		// Cancel the runs (their process groups are killed) and give them
		// a moment to be recorded; what is still running then is marked
		// interrupted at the next start.
		log.Warn("forced stop: cancelling runs in flight")
		l.eng.Abort()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			log.Warn("runs still in flight will be recorded as interrupted at the next start")
		}
		os.Remove(sock)
		os.Exit(exitError)
	}
	return exitOK
}

// abandon ends a daemon whose database or lock file was removed or
// replaced under it (the engine's Guard failed, and it has stopped
// triggering): it cancels the runs in flight, whose process groups are
// killed, and exits non-zero at once. It closes nothing by path: the
// socket, the WAL and the lock file at those paths may by now belong to
// another hookd, and closing the last connection to the old database
// would delete the WAL file at its path.
func abandon(l *local, log *slog.Logger, err error) {
	log.Error("hookd exits: cancelling the runs in flight; start hookd again to run on the database now at its path",
		"err", err)
	l.eng.Abort()
	done := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		l.eng.Shutdown(ctx)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		log.Warn("runs still in flight are abandoned")
	}
	os.Exit(exitError)
}

// daemonEvent publishes one of the daemon's own events (hookd.started,
// hookd.stopping) to the hooks whose event trigger matches it and to the
// live stream. It is not stored in the event log: it says what this
// process did, and is not dispatched again after a crash.
func daemonEvent(eng *engine.Engine, log *slog.Logger, typ string, info *engine.DaemonInfo) {
	data := map[string]any{"pid": info.PID, "hooks": info.Hooks}
	if info.Signal != "" {
		data["signal"] = info.Signal
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := &engine.Event{ID: engine.NewID(), Type: typ, Source: "hookd", Data: data, Time: time.Now()}
	if _, err := eng.Dispatch(ctx, ev); err != nil {
		log.Error("publish daemon event", "event", typ, "err", err)
	}
}
