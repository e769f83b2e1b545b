package daemon

import (
	"context"
	"io"
	"math"
	"runtime"
	"runtime/debug"
	"sync"

	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hookd/hookd/api/server"
	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/handlers"
	"github.com/hookd/hookd/internal/procjournal"
	"github.com/hookd/hookd/process"
	_ "github.com/hookd/hookd/steps" // registers the step kinds
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/triggers"

	_ "time/tzdata" // time zones on machines without zone files
	// also registers the step kinds
)

// ProcJournalSuffix names the process journal after the database
// (.hookd/hookd.db -> .hookd/hookd.db.procs), beside its lock: the file
// where the lock's holder records the process groups of its running
// steps (internal/procjournal), for both stores.
const ProcJournalSuffix = config.ProcJournalSuffix

// LoadHooks loads the hooks directory: its hooks and the errors of the
// files that did not load.
func LoadHooks(d *config.Daemon) ([]*engine.Hook, []error, error) {
	hooks, _, errs, err := LoadAll(d)
	return hooks, errs, err
}

// LoadAll loads the hooks directory's hooks and command handlers. The
// load runs at loadGCPercent, for every command that loads (render, an
// offline list, ...; validate checks with CheckAll) as for serve, whose
// loadGC has raised it already: at the default GOGC `hookd validate` of
// 10,000 files took 0.60 s and 1.16 CPU-s, at 400 0.49 s and 0.95 (its
// peak 110 -> 180 MB).
func LoadAll(d *config.Daemon) ([]*engine.Hook, []*config.Handler, []error, error) {
	l, err := LoadReport(d)
	return l.Hooks, l.Handlers, l.Errs, err
}

// LoadReport is LoadAll that also says, as typed values, which files did
// not load (config.LoadDirReport): what the daemon's engine keeps listing.
func LoadReport(d *config.Daemon) (config.DirLoad, error) {
	if err := hooksDirExists(d); err != nil {
		return config.DirLoad{}, err
	}
	restore, _ := RaiseGCPercent(loadGCPercent)
	defer restore()
	return config.LoadDirReport(d.HooksDir, d.HookOptions()), nil
}

// CheckAll checks the hooks directory as LoadAll loads it, keeping of
// each hook only its name (config.CheckDir): for validate, which prints
// no more.
func CheckAll(d *config.Daemon, with ...func(*config.Options)) ([]string, []*config.Handler, []error, error) {
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

// A check of hooks.d (CheckAll) keeps little alive: each file's parse
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
		restore, _ := RaiseGCPercent(loadGCPercent)
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

// Local is an engine in this process on a locked database, with what it
// runs with (the model, MCP servers, handlers, the process journal):
// what a daemon runs, and what the commands that run hooks without one
// (fire, emit) start the engine of. Close releases it.
type Local struct {
	Store  engine.Store // the store, SQLite or PostgreSQL (database.go)
	SQLite *store.DB    // the same store when it is SQLite, else nil
	Engine *engine.Engine
	Hooks  []*engine.Hook
	Clock  clock.Clock   // the engine's clock, which all else that waits or measures reads too (model, MCP, notifications)
	feed   *server.Feed  // told whenever events are stored
	hs     *handlers.Set // the command handlers of hooks.d
	model  *model        // the LLM client and MCP servers hookd started with
	llm    *swapLLM      // the engine's client: model, or what a reloaded hookd.yaml replaced it with
	lock   Lock
	procs  *procjournal.Journal // the process groups of running steps, for a restart after a crash
	// broken are the hook files that did not load, which the engine keeps
	// listing once it runs (engine.Engine.SetBroken)
	broken []engine.BrokenFile

	member *postgres.Member // this node of the cluster, with database: on PostgreSQL (hookd serve); else nil
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
	restore, raised := RaiseGCPercent(loadGCPercent)
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

// RaiseGCPercent sets the collector's GOGC to p, unless GOGC is set
// higher or off, and returns the function that sets it back.
func RaiseGCPercent(p int) (restore func(), raised bool) {
	old := debug.SetGCPercent(p)
	if old < 0 || old >= p {
		debug.SetGCPercent(old)
		return func() {}, false
	}
	return func() { debug.SetGCPercent(old) }, true
}

// Open takes the database's lock as holder (store.Daemon for a daemon,
// else the command's name), opens the store, loads hooks.d and builds
// the engine, without starting it, so that observers can subscribe
// before the first event. Manual engines fire only what they are told
// to. A daemon (not manual) waits for a
// SQLite lock held by a hookd command run without a daemon (a `hookd
// fire` or `hookd emit` of a script while the daemon restarts), logging
// what it waits for, until ctx ends; a manual engine does not wait.
func Open(ctx context.Context, d *config.Daemon, holder string, log *slog.Logger, manual bool) (*Local, error) {
	sbStatus, err := InstallSandbox(d, log)
	if err != nil {
		return nil, err
	}
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
		config.DirLoad
		err error
	}
	loadDone := make(chan loadResult, 1)
	gcDone := loadGC()
	defer gcDone()
	go func() {
		var r loadResult
		r.DirLoad, r.err = LoadReport(d)
		loadDone <- r
	}()
	waited := false
	var waiting func(command string, pid int)
	if !manual {
		holder = store.Daemon
		waiting = func(command string, pid int) {
			waited = true
			log.Warn("database locked by a hookd command run without a daemon: waiting for it to end",
				"command", "hookd "+command, "pid", pid, "db", DatabaseName(d))
		}
	}
	o, err := LockAndOpen(ctx, d, holder, node, waiting)
	if err != nil {
		return nil, err
	}
	l := &Local{Store: o.Store, SQLite: o.SQLite, Clock: o.Clock, lock: o.Lock, feed: server.NewFeed()}
	// The store wakes the live stream after every event write.
	o.Store.Observe(engine.StoreObserver{EventsStored: l.feed.Wake})
	// The lock's holder alone opens the process journal, as the database.
	if l.procs, err = procjournal.Open(d.DB + ProcJournalSuffix); err != nil {
		l.Close()
		return nil, err
	}
	var cluster engine.Cluster
	if o.Postgres != nil && node != "" {
		l.member = o.Postgres.Member(node, d.NodeMaxConcurrent(), d.Node.HeartbeatTimeout)
		cluster = l.member
	}
	r := <-loadDone
	if waited {
		// hooks.d was loaded before the wait: load what it holds now.
		r.DirLoad, r.err = LoadReport(d)
	}
	gcDone()
	hooks, hs, errs, err := r.Hooks, r.Handlers, r.Errs, r.err
	if err != nil {
		l.Close()
		return nil, err
	}
	for _, e := range errs {
		log.Error("hook file not loaded", "err", e.Error())
	}
	l.Hooks, l.broken = hooks, r.Broken
	lifecycle := engine.NewRegistry()
	lifecycle.SetLogger(log)
	lifecycle.SetSequential(d.Sequential)
	l.hs = handlers.NewSet(lifecycle, nil)
	l.hs.Apply(hs, nil)
	grace := d.Grace
	if grace == 0 {
		// grace: 0 in hookd.yaml means do not wait; the engine reads a
		// zero Grace as "unset" and would wait its default 30s.
		grace = time.Nanosecond
	}
	l.model = newModel(d, log, l.Clock)
	l.llm = newSwapLLM(l.model)
	l.Engine, err = engine.New(engine.Config{
		Clock:          l.Clock,
		LLM:            l.llm,
		Lifecycle:      lifecycle,
		HooksDir:       l.model.hooksDir,
		Protected:      l.model.protected,
		Database:       absPath(d.DB),
		Credentials:    CredentialEnv(d),
		Store:          l.Store,
		Reap:           process.ReapGroup,
		Procs:          l.procs,
		Events:         triggers.NewEventIndex(),
		Prompt:         PromptRenderer(d),
		Logger:         log,
		MaxConcurrent:  d.MaxConcurrent,
		Tick:           d.Tick,
		QueueSize:      d.QueueSize,
		Grace:          grace,
		StoreTimeout:   d.StoreTimeout,
		DefaultTimeout: d.DefaultTimeout,
		MaxCatchup:     d.MaxCatchup,
		Budget:         d.Budget,
		Manual:         manual,
		Guard:          l.guard,
		Cluster:        cluster,
		OthersStored:   l.feed.Wake,
		Sandbox:        &sbStatus,

		CredentialValues: CredentialValues(d),
	}, hooks)
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// guard is the engine's Guard: the lock and the database must still be
// the files at their paths (see store.DaemonLock.Check).
func (l *Local) guard() error {
	if err := l.lock.Check(); err != nil {
		return err
	}
	if l.SQLite == nil {
		return nil
	}
	return l.SQLite.Check()
}

func (l *Local) Close() {
	if l.Engine != nil {
		l.Engine.Stop()
	}
	if l.llm != nil {
		l.llm.close()
	} else {
		l.model.close()
	}
	if l.procs != nil {
		l.procs.Close()
	}
	if l.Store != nil {
		l.Store.Close()
	}
	if l.lock != nil {
		l.lock.Unlock()
	}
}

// NewLogger makes the logger of a hookd process in the configured format
// (hookd.yaml's log_format: text or json).
func NewLogger(format string, w io.Writer, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
