package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/store/postgres"
)

// pruneFirst is how long after the start the daemon first prunes: not
// in the way of catch-up runs, soon enough that a restart loop prunes too.
const pruneFirst = time.Minute

// prunable is a store retention prunes: the SQLite file or PostgreSQL
// (both held to the same rules by the store contract suite).
type prunable interface {
	Prune(ctx context.Context, now time.Time, p store.PrunePolicy) (store.PruneStats, error)
	Size(ctx context.Context) (store.Size, error)
}

// pruner deletes the history retention lets go: in the background every
// PruneEvery, and when asked (`hookd prune`). One prune runs at a time
// (on PostgreSQL, one in the whole cluster: another node's prune under
// way makes this one skip its turn).
type pruner struct {
	db      prunable
	where   api.DBWhere // what status says the database is
	ret     engine.Retention
	every   time.Duration
	log     *slog.Logger
	counted func(kind string, n int64) // metrics; nil for none
	clock   clock.Clock                // the engine's: when a prune runs, and the ages it prunes by

	run sync.Mutex // held while a prune runs

	mu    sync.Mutex
	hooks map[string]engine.HookRetention
	last  *api.PruneReport

	ctx    context.Context // cancelled by Stop
	cancel context.CancelFunc
	done   chan struct{}
}

func newPruner(db prunable, d *config.Daemon, hooks []*engine.Hook, log *slog.Logger, counted func(string, int64), clk clock.Clock) *pruner {
	p := &pruner{db: db, where: whereOf(d), ret: d.Retention, every: d.PruneEvery, log: log, counted: counted, clock: clk,
		done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.SetHooks(hooks)
	return p
}

// SetHooks takes the hooks' own retention, after a reload.
func (p *pruner) SetHooks(hooks []*engine.Hook) {
	m := make(map[string]engine.HookRetention, len(hooks))
	for _, h := range hooks {
		m[h.Name] = h.Retention
	}
	p.mu.Lock()
	p.hooks = m
	p.mu.Unlock()
}

// Start prunes in the background, first after pruneFirst (or every, if
// sooner), then every p.every. It does not block.
func (p *pruner) Start() {
	go func() {
		defer close(p.done)
		t := p.clock.NewTimer(min(pruneFirst, p.every))
		defer t.Stop()
		for {
			select {
			case <-p.ctx.Done():
				return
			case <-t.C():
			}
			p.Prune(p.ctx, false)
			t.Reset(p.every)
		}
	}()
}

// Stop ends the background pruning, cancelling a prune under way (what
// it deleted stays deleted), and waits for it. Safe to call twice.
func (p *pruner) Stop() {
	p.cancel()
	<-p.done
}

// Prune prunes now (or, dryRun, counts what it would delete).
func (p *pruner) Prune(ctx context.Context, dryRun bool) *api.PruneReport {
	p.run.Lock()
	defer p.run.Unlock()
	p.mu.Lock()
	pol := store.PrunePolicy{Retention: p.ret, Hooks: p.hooks, DryRun: dryRun}
	p.mu.Unlock()
	rep := &api.PruneReport{At: p.clock.Now()}
	st, err := p.db.Prune(ctx, rep.At, pol)
	rep.PruneStats = st
	if err != nil {
		rep.Error = err.Error()
	}
	if dryRun {
		return rep
	}
	if errors.Is(err, postgres.ErrPruning) {
		p.log.Info("prune skipped: another node is pruning the database")
		return rep
	}
	if p.counted != nil {
		p.counted("runs", st.Runs)
		p.counted("skipped", st.Skipped)
		p.counted("events", st.Events)
	}
	attrs := []any{"runs", st.Runs, "skipped", st.Skipped, "events", st.Events,
		"freed_bytes", st.FreedBytes, "took", st.Took.Round(time.Millisecond)}
	switch {
	case err != nil:
		p.log.Error("prune history", append(attrs, "err", err)...)
	case st.Runs+st.Skipped+st.Events > 0:
		p.log.Info("pruned history", attrs...)
	}
	p.mu.Lock()
	p.last = rep
	p.mu.Unlock()
	return rep
}

// Last returns the latest prune that was not a dry run, nil before the
// first.
func (p *pruner) Last() *api.PruneReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Prune prunes the database of d in this process, as holder (the
// command's name) of its lock; warn is told of each hook file that does
// not load (its own retention does not apply).
func Prune(ctx context.Context, d *config.Daemon, holder string, dryRun bool, warn func(error)) (*api.PruneReport, error) {
	if d.Database != "" {
		// PostgreSQL: daemons of other machines may run; pruning beside
		// them is safe (it keeps what they read), and one prune runs at a
		// time in the cluster.
		db, err := OpenStore(d)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		return pruneWith(ctx, d, db, dryRun, warn)
	}
	if _, err := os.Stat(d.DB); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no database at %s: nothing to prune", d.DB)
	}
	lock, err := store.Lock(d.DB, holder)
	if err != nil {
		if errors.Is(err, engine.ErrLocked) {
			return nil, fmt.Errorf("%w; its socket %s does not answer", err, api.SocketPath(d.DB))
		}
		return nil, err
	}
	defer lock.Unlock()
	db, err := store.Open(d.DB)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if !dryRun {
		if _, err := db.EnableIncrementalVacuum(ctx); err != nil {
			return nil, err
		}
	}
	return pruneWith(ctx, d, db, dryRun, warn)
}

// pruneWith prunes db with the retention of hookd.yaml and of the hooks
// that load.
func pruneWith(ctx context.Context, d *config.Daemon, db prunable, dryRun bool, warn func(error)) (*api.PruneReport, error) {
	var hooks []*engine.Hook
	if _, err := os.Stat(d.HooksDir); err == nil {
		var errs []error
		if hooks, errs, err = LoadHooks(d); err != nil {
			return nil, err
		}
		for _, e := range errs {
			warn(e)
		}
	}
	log := NewLogger(d.LogFormat, os.Stderr, slog.LevelWarn)
	rep := newPruner(db, d, hooks, log, nil, clock.Wall{}).Prune(ctx, dryRun)
	if rep.Error != "" {
		return nil, errors.New(rep.Error)
	}
	return rep, nil
}

// Size is the database's size (server.Pruner).
func (p *pruner) Size(ctx context.Context) (store.Size, error) { return p.db.Size(ctx) }

// Where says which database p prunes (server.Pruner).
func (p *pruner) Where() api.DBWhere { return p.where }
