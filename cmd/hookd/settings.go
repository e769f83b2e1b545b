package main

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"sync"

	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/handlers"
	"github.com/hookd/hookd/internal/procjournal"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/triggers"

	"github.com/hookd/hookd/steps" // also registers the step kinds
	_ "time/tzdata"                // time zones on machines without zone files
)

// settings resolves hookd.yaml and the flags that override it.
func (c *cli) settings() (*config.Daemon, error) {
	path, explicit := c.configPath, c.configPath != ""
	if !explicit {
		path = "hookd.yaml"
	}
	if _, err := os.Stat(path); explicit && err != nil {
		return nil, fmt.Errorf("settings file: %w", err)
	}
	d, err := config.LoadDaemonFile(path)
	if err != nil {
		return nil, err
	}
	if v := os.Getenv(config.DatabaseEnv); v != "" {
		d.SetDatabase(v)
	}
	if c.dbPath != "" {
		d.SetDatabase(c.dbPath)
	}
	if c.hooksDir != "" {
		d.HooksDir = c.hooksDir
	}
	d.HooksDir = shortPath(d.HooksDir)
	d.DB = shortPath(d.DB)
	return d, nil
}

// shortPath makes a path under the working directory relative, so
// messages name files the way the user typed them.
func shortPath(p string) string {
	wd, err := os.Getwd()
	if err != nil || !filepath.IsAbs(p) {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// socketPath is where the daemon for db listens: next to it, named after
// it (.hookd/hookd.db -> .hookd/hookd.sock), so two databases in one
// directory never share a socket.
func socketPath(db string) string {
	return strings.TrimSuffix(db, filepath.Ext(db)) + ".sock"
}

// procJournalSuffix names the process journal after the database
// (.hookd/hookd.db -> .hookd/hookd.db.procs), beside its lock: the file
// where the lock's holder records the process groups of its running
// steps (internal/procjournal), for both stores.
const procJournalSuffix = config.ProcJournalSuffix

// loadHooks loads the hooks directory, reporting bad files on stderr.
func (c *cli) loadHooks(d *config.Daemon) ([]*engine.Hook, []error, error) {
	hooks, _, errs, err := c.loadAll(d)
	return hooks, errs, err
}

// loadAll loads the hooks directory's hooks and command handlers. The
// load runs at loadGCPercent, for every command that loads (render, an
// offline list, ...; validate checks with checkAll) as for serve, whose
// loadGC has raised it already: at the default GOGC `hookd validate` of
// 10,000 files took 0.60 s and 1.16 CPU-s, at 400 0.49 s and 0.95 (its
// peak 110 -> 180 MB).
func (c *cli) loadAll(d *config.Daemon) ([]*engine.Hook, []*config.Handler, []error, error) {
	if err := hooksDirExists(d); err != nil {
		return nil, nil, nil, err
	}
	restore, _ := raiseGCPercent(loadGCPercent)
	defer restore()
	hooks, hs, errs := config.LoadDirAll(d.HooksDir, d.HookOptions())
	return hooks, hs, errs, nil
}

// checkAll checks the hooks directory as loadAll loads it, keeping of
// each hook only its name (config.CheckDir): for validate, which prints
// no more.
func (c *cli) checkAll(d *config.Daemon, with ...func(*config.Options)) ([]string, []*config.Handler, []error, error) {
	if err := hooksDirExists(d); err != nil {
		return nil, nil, nil, err
	}
	defer checkGC()()
	opts := d.HookOptions()
	for _, f := range with {
		f(&opts)
	}
	names, hs, errs := config.CheckDir(d.HooksDir, opts)
	return names, hs, errs, nil
}

// A check of hooks.d (checkAll) keeps little alive: each file's parse
// tree and hook while it is checked, and the names. So it runs with
// GOGC off under a memory limit of checkMemoryBase plus
// checkMemoryPerWorker for each loading worker (one a CPU): the
// collector runs when the heap nears the limit, not each time it is 5
// times the few MB alive (GOGC 400). `hookd validate` of 10,000 files,
// alternating, 9 rounds, load ~11: 0.83 CPU-s and a 68 MB peak RSS
// against 0.91 CPU-s and 63 MB at GOGC 400 (with a 64 MiB limit: 0.80,
// 84 MB; GOGC 800: 0.81, 102 MB). The limit is soft: files whose parse
// trees alone pass it (a few files near the 4 MiB size limit) make the
// collector run more, at most half the CPU, until they are done.
const (
	checkMemoryBase      = 32 << 20
	checkMemoryPerWorker = 8 << 20
)

// checkGC sets the collector for a check of hooks.d and returns the
// function that sets it back. A GOGC of off or a GOMEMLIMIT the user
// set is left to them, with GOGC raised as for a load (raiseGCPercent).
func checkGC() (restore func()) {
	limit := debug.SetMemoryLimit(-1) // reads it
	if limit != math.MaxInt64 {
		restore, _ := raiseGCPercent(loadGCPercent)
		return restore
	}
	old := debug.SetGCPercent(-1)
	if old < 0 {
		return func() {}
	}
	debug.SetMemoryLimit(checkMemoryBase + checkMemoryPerWorker*int64(runtime.GOMAXPROCS(0)))
	return func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(old)
	}
}

// hooksDirExists returns an error when the hooks directory is not a
// directory.
func hooksDirExists(d *config.Daemon) error {
	if fi, err := os.Stat(d.HooksDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("hooks directory %s does not exist (use --hooks DIR)", d.HooksDir)
	}
	return nil
}

// local is an engine on this process, holding the database lock.
type local struct {
	st    engine.Store // the store, SQLite or PostgreSQL (database.go)
	db    *store.DB    // the same store when it is SQLite, else nil
	eng   *engine.Engine
	hooks []*engine.Hook
	feed  *eventFeed    // told whenever events are stored
	hs    *handlers.Set // the command handlers of hooks.d
	model *model        // the LLM client and MCP servers hookd started with
	llm   *swapLLM      // the engine's client: model, or what a reloaded hookd.yaml replaced it with
	lock  daemonLock
	procs *procjournal.Journal // the process groups of running steps, for a restart after a crash

	member *postgres.Member // this node of the cluster, with database: on PostgreSQL (hookd serve); else nil
}

// openLocal takes the database lock, opens the store, loads the hooks and
// builds and starts an engine. manual engines fire only what they are
// told to.
func (c *cli) openLocal(d *config.Daemon, log *slog.Logger, manual bool) (*local, error) {
	l, err := c.newLocal(context.Background(), d, log, manual)
	if err != nil {
		return nil, err
	}
	if err := l.eng.Start(context.Background()); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// loadGCPercent is the collector's GOGC while hooks.d loads. Loading
// allocates about 20 KB a hook file, nearly all of it garbage at once
// (the YAML parser's state and node tree, the shell parser's syntax
// tree), while the loaded hooks accumulate: at the default 100 the
// collector ran over the growing heap again and again, a fifth of a
// start's CPU with 10,000 hooks.
const loadGCPercent = 400

// loadGC sets the collector's GOGC to loadGCPercent for a load, unless
// GOGC is set higher or off, and returns the function that sets it back
// and collects the load's garbage, returning the memory to the system:
// the heap after start-up is about what it was; the peak while loading
// is higher (110-130 MB instead of 75-80 MB with 10,000 hooks).
func loadGC() (done func()) {
	restore, raised := raiseGCPercent(loadGCPercent)
	if !raised {
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			restore()
			debug.FreeOSMemory()
		})
	}
}

// raiseGCPercent sets the collector's GOGC to p, unless GOGC is set
// higher or off, and returns the function that sets it back.
func raiseGCPercent(p int) (restore func(), raised bool) {
	old := debug.SetGCPercent(p)
	if old < 0 || old >= p {
		debug.SetGCPercent(old)
		return func() {}, false
	}
	return func() { debug.SetGCPercent(old) }, true
}

// newLocal is openLocal without starting the engine, so that observers
// can subscribe before the first event. A daemon (not manual) waits for a
// SQLite lock held by a hookd command run without a daemon (a `hookd
// fire` or `hookd emit` of a script while the daemon restarts), logging
// what it waits for, until ctx ends; a manual engine does not wait.
func (c *cli) newLocal(ctx context.Context, d *config.Daemon, log *slog.Logger, manual bool) (*local, error) {
	sbStatus := installSandbox(d, log)
	// hookd serve on PostgreSQL is a node of a cluster (docs/cluster.md).
	node := ""
	if d.Database != "" && !manual {
		if node = d.NodeName(); !config.ValidNodeName(node) {
			return nil, fmt.Errorf("the host name %q cannot name this node: set node.name in %s", node, d.SettingsPath)
		}
	}
	// The hooks directory loads (reading files only) while the lock is
	// taken and the database opened (migrated, on a first start): start-up
	// waits for the longer of the two, not their sum. A lock held by
	// another hookd is reported at once; the load's result is dropped.
	type loadResult struct {
		hooks []*engine.Hook
		hs    []*config.Handler
		errs  []error
		err   error
	}
	loadDone := make(chan loadResult, 1)
	gcDone := loadGC()
	defer gcDone()
	go func() {
		var r loadResult
		r.hooks, r.hs, r.errs, r.err = c.loadAll(d)
		loadDone <- r
	}()
	holder, waited := c.name, false
	var waiting func(command string, pid int)
	if !manual {
		holder = store.Daemon
		waiting = func(command string, pid int) {
			waited = true
			log.Warn("database locked by a hookd command run without a daemon: waiting for it to end",
				"command", "hookd "+command, "pid", pid, "db", databaseName(d))
		}
	}
	st, sqlite, lock, err := lockAndOpen(ctx, d, holder, node, waiting)
	if err != nil {
		return nil, err
	}
	l := &local{st: st, db: sqlite, lock: lock, feed: newEventFeed()}
	// The store wakes the live stream after every event write.
	st.Observe(engine.StoreObserver{EventsStored: l.feed.wake})
	// The lock's holder alone opens the process journal, as the database.
	if l.procs, err = procjournal.Open(d.DB + procJournalSuffix); err != nil {
		l.close()
		return nil, err
	}
	var cluster engine.Cluster
	if pg, ok := st.(*postgres.DB); ok && node != "" {
		l.member = pg.Member(node, d.NodeMaxConcurrent(), d.Node.HeartbeatTimeout)
		cluster = l.member
	}
	r := <-loadDone
	if waited {
		// hooks.d was loaded before the wait: load what it holds now.
		r.hooks, r.hs, r.errs, r.err = c.loadAll(d)
	}
	gcDone()
	hooks, hs, errs, err := r.hooks, r.hs, r.errs, r.err
	if err != nil {
		l.close()
		return nil, err
	}
	for _, e := range errs {
		log.Error("hook file not loaded", "err", e.Error())
	}
	l.hooks = hooks
	lifecycle := engine.NewRegistry()
	lifecycle.SetLogger(log)
	l.hs = handlers.NewSet(lifecycle, nil)
	l.hs.Apply(hs, nil)
	grace := d.Grace
	if grace == 0 {
		// grace: 0 in hookd.yaml means do not wait; the engine reads a
		// zero Grace as "unset" and would wait its default 30s.
		grace = time.Nanosecond
	}
	l.model = newModel(d, log)
	l.llm = newSwapLLM(l.model)
	l.eng, err = engine.New(engine.Config{
		LLM:            l.llm,
		Lifecycle:      lifecycle,
		HooksDir:       l.model.hooksDir,
		Protected:      l.model.protected,
		Database:       absPath(d.DB),
		Credentials:    credentialEnv(d),
		Store:          l.st,
		Reap:           steps.ReapGroup,
		Procs:          l.procs,
		Events:         triggers.NewEventIndex(),
		Prompt:         promptRenderer(d),
		Logger:         log,
		MaxConcurrent:  d.MaxConcurrent,
		Tick:           d.Tick,
		QueueSize:      d.QueueSize,
		Grace:          grace,
		DefaultTimeout: d.DefaultTimeout,
		MaxCatchup:     d.MaxCatchup,
		Budget:         d.Budget,
		Manual:         manual,
		Guard:          l.guard,
		Cluster:        cluster,
		OthersStored:   l.feed.wake,
		Sandbox:        &sbStatus,

		CredentialValues: credentialValues(d),
	}, hooks)
	if err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// guard is the engine's Guard: the lock and the database must still be
// the files at their paths (see store.DaemonLock.Check).
func (l *local) guard() error {
	if err := l.lock.Check(); err != nil {
		return err
	}
	if l.db == nil {
		return nil
	}
	return l.db.Check()
}

func (l *local) close() {
	if l.eng != nil {
		l.eng.Stop()
	}
	if l.llm != nil {
		l.llm.close()
	} else {
		l.model.close()
	}
	if l.procs != nil {
		l.procs.Close()
	}
	if l.st != nil {
		l.st.Close()
	}
	if l.lock != nil {
		l.lock.Unlock()
	}
}

// newLogger makes the process logger in the configured format.
func newLogger(format string, w *os.File, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
