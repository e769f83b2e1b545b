package triggers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hookd/hookd/engine"
)

// WatchTarget is what a Watcher fires: *engine.Engine.
type WatchTarget interface {
	FireWatch(ctx context.Context, hook string, ev *engine.Event) (*engine.Run, error)
}

// WatcherOptions configure a Watcher.
type WatcherOptions struct {
	// Target fires the hooks; required by SetHooks.
	Target WatchTarget
	// Snapshots keeps what scan_on_start watches saw; without it
	// scan_on_start is reported and ignored.
	Snapshots engine.WatchSnapshots
	Logger    *slog.Logger
	// PollInterval is how often polling watches (poll: true, or the
	// fallback when inotify's limits are reached) look at their files.
	// Default 1s.
	PollInterval time.Duration
	// Exclude lists paths that are never reported, nor anything whose
	// name starts with them: hookd's own database, its journal and
	// socket, which would otherwise fire a watch of the project on every
	// run.
	Exclude []string
}

// DefaultPollInterval is the polling interval when none is given.
const DefaultPollInterval = time.Second

// Change is one path's change, as a watch window reports it.
type Change struct {
	Path    string    // absolute
	OldPath string    // for OpRenamed: the old name
	Op      string    // engine.OpCreated, OpModified, OpDeleted or OpRenamed
	Size    int64     // of the file now; 0 when deleted
	ModTime time.Time // of the file now; zero when deleted
	// OldModTime is the file's modification time before the change; zero
	// when it did not exist (created).
	OldModTime time.Time

	seq int // order of the latest change in the window
}

// Watcher is the daemon's one file watcher. It keeps one fsnotify
// (inotify) instance for every watch, watching folders rather than files,
// and fires each hook whose watch saw a change, after its quiet period,
// through WatchTarget.FireWatch. A goroutine owns all its state; the
// methods talk to it over a channel.
type Watcher struct {
	opts WatcherOptions
	log  *slog.Logger

	msgs      chan func()
	done      chan struct{} // closed by Stop
	runDone   chan struct{}
	fireDone  chan struct{}
	started   atomic.Bool
	startOnce sync.Once
	stopOnce  sync.Once
	fireCtx   context.Context
	fireStop  context.CancelFunc
	fires     fireQueue

	// Owned by the run goroutine.
	fsn        *fsnotify.Watcher // nil when inotify is not available
	fsnErr     error             // why fsn is nil
	dirs       map[string]*dirNode
	watches    map[string]*watch // by key
	open       map[*watch]bool   // watches with an open window
	polling    map[*watch]bool
	lastRename *renameFrom
	degrade    map[*watch]error // watches to move to polling after the current step
	resolveQ   []*root          // roots to resolve again after the current step
	timer      *time.Timer
	pollTicker *time.Ticker

	// Seams for tests.
	newFS     func() (*fsnotify.Watcher, error) // default fsnotify.NewWatcher
	addWatch  func(path string) error           // default fsn.Add
	rawFilter func(ev fsnotify.Event) bool      // false drops the event (as an overflow would)
	now       func() time.Time
}

// NewWatcher returns a watcher; Start starts it.
func NewWatcher(opts WatcherOptions) *Watcher {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	w := &Watcher{
		opts:     opts,
		log:      opts.Logger,
		msgs:     make(chan func()),
		done:     make(chan struct{}),
		runDone:  make(chan struct{}),
		fireDone: make(chan struct{}),
		dirs:     map[string]*dirNode{},
		watches:  map[string]*watch{},
		open:     map[*watch]bool{},
		polling:  map[*watch]bool{},
		degrade:  map[*watch]error{},
		now:      time.Now,
		newFS:    fsnotify.NewWatcher,
	}
	w.fires.init()
	return w
}

// ErrWatcherStopped is returned by calls on a watcher that is not running.
var ErrWatcherStopped = errors.New("triggers: watcher is not running")

// Start creates the inotify instance and starts the watcher's goroutines.
// It does not block. When inotify cannot be had (its instance limit is
// reached), it says so and every watch polls instead.
func (w *Watcher) Start(ctx context.Context) error {
	err := errors.New("triggers: watcher started twice")
	w.startOnce.Do(func() {
		err = nil
		fsn, ferr := w.newFS()
		if ferr != nil {
			w.fsnErr = ferr
			w.log.Error("file watch: cannot create an inotify instance"+limitHint(ferr)+" (every watch)",
				"err", ferr, "poll_interval", w.opts.PollInterval)
		} else {
			w.fsn = fsn
			if w.addWatch == nil {
				w.addWatch = fsn.Add
			}
		}
		w.timer = time.NewTimer(time.Hour)
		w.timer.Stop()
		w.fireCtx, w.fireStop = context.WithCancel(context.WithoutCancel(ctx))
		w.started.Store(true)
		go w.run(ctx)
		go w.fireLoop()
	})
	return err
}

// Stop stops watching and waits for the goroutines. Changes still inside
// their quiet period, or waiting to be fired, are not fired (a
// scan_on_start watch finds them at the next start); snapshot writes
// still waiting are done. Safe to call more than once, and before Start.
func (w *Watcher) Stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		if !w.started.Load() {
			return
		}
		<-w.runDone
		w.fires.signal()
		<-w.fireDone
		w.fireStop()
		if w.fsn != nil {
			w.fsn.Close()
		}
	})
}

// do runs f on the watcher's goroutine and waits for it.
func (w *Watcher) do(ctx context.Context, f func()) error {
	if !w.started.Load() {
		return ErrWatcherStopped
	}
	done := make(chan struct{})
	select {
	case w.msgs <- func() { f(); close(done) }:
	case <-w.done:
		return ErrWatcherStopped
	case <-w.runDone:
		return ErrWatcherStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-w.runDone:
		return ErrWatcherStopped
	}
}

// SetHooks makes the watched hooks those of hooks with a watch trigger:
// new ones start watching, removed ones stop (and their scan_on_start
// snapshot is dropped), changed ones are set up again (changes inside
// their quiet period are kept). It returns once the watches are in
// place, so a change made after it returns is seen.
func (w *Watcher) SetHooks(ctx context.Context, hooks []*engine.Hook) error {
	if w.opts.Target == nil {
		return errors.New("triggers: WatcherOptions.Target is required to watch hooks")
	}
	want := map[string]*engine.Hook{}
	for _, h := range hooks {
		if h.Trigger.Kind == engine.TriggerWatch && h.Trigger.Watch != nil {
			want[hookKey(h.Name)] = h
		}
	}
	return w.do(ctx, func() {
		for key, wt := range w.watches {
			if wt.hook == nil {
				continue
			}
			if want[key] == nil {
				w.teardown(wt)
				delete(w.watches, key)
				delete(w.open, wt)
				if wt.spec.ScanOnStart && w.opts.Snapshots != nil {
					name := wt.name
					w.fires.push(func(ctx context.Context, _ bool) {
						if err := w.opts.Snapshots.DeleteSnapshot(ctx, name); err != nil {
							w.log.Error("file watch: drop snapshot", "hook", name, "err", err)
						}
					})
				}
			}
		}
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, key := range keys {
			h := want[key]
			old := w.watches[key]
			if old != nil && old.workdir == h.Workdir && reflect.DeepEqual(old.spec, *h.Trigger.Watch) {
				old.hook = h // same watch; a new definition of the rest
				continue
			}
			nw, err := newWatch(key, h.Name, *h.Trigger.Watch, h.Workdir)
			if err != nil {
				w.log.Error("file watch: not watching", "hook", h.Name, "err", err)
				continue
			}
			nw.hook = h
			first := old == nil
			if old != nil {
				w.teardown(old)
				delete(w.open, old)
				nw.win = old.win // changes seen so far are kept
			}
			w.watches[key] = nw
			w.setup(nw, first)
		}
		w.settle()
	})
}

// WatchFunc watches spec for the daemon itself (hookd's hooks directory)
// and calls fn with each window's changes, on the watcher's firing
// goroutine. A second call with the same name replaces the first.
func (w *Watcher) WatchFunc(ctx context.Context, name string, spec engine.WatchSpec, fn func([]Change)) error {
	return w.do(ctx, func() {
		key := "func:" + name
		if old := w.watches[key]; old != nil {
			w.teardown(old)
			delete(w.open, old)
		}
		nw, err := newWatch(key, name, spec, "")
		if err != nil {
			w.log.Error("file watch: not watching", "name", name, "err", err)
			return
		}
		nw.fn = fn
		w.watches[key] = nw
		w.setup(nw, false)
		w.settle()
	})
}

// WatchStats describes what a watcher watches.
type WatchStats struct {
	Dirs    int      // folders watched with inotify
	Polling []string // watches that poll
}

// Stats reports what the watcher watches.
func (w *Watcher) Stats(ctx context.Context) (WatchStats, error) {
	var st WatchStats
	err := w.do(ctx, func() {
		for _, n := range w.dirs {
			if n.watched {
				st.Dirs++
			}
		}
		for wt := range w.polling {
			st.Polling = append(st.Polling, wt.name)
		}
		sort.Strings(st.Polling)
	})
	return st, err
}

func hookKey(name string) string { return "hook:" + name }

// run is the watcher's goroutine: it owns every watch, folder and window.
func (w *Watcher) run(ctx context.Context) {
	defer close(w.runDone)
	defer w.timer.Stop()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w.fsn != nil {
		events, errs = w.fsn.Events, w.fsn.Errors
	}
	for {
		var pollC <-chan time.Time
		if w.pollTicker != nil {
			pollC = w.pollTicker.C
		}
		select {
		case <-ctx.Done():
			w.stopPolling()
			return
		case <-w.done:
			w.stopPolling()
			return
		case f := <-w.msgs:
			f()
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			w.raw(ev)
			// Take what else is waiting before looking at the windows.
			for n := 0; n < 256; n++ {
				select {
				case ev, ok := <-events:
					if !ok {
						events = nil
					} else {
						w.raw(ev)
						continue
					}
				default:
				}
				break
			}
			w.settle()
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			w.watchError(err)
			w.settle()
		case <-pollC:
			w.pollAll()
			w.settle()
		case <-w.timer.C:
		}
		w.flushDue()
		w.resetTimer()
	}
}

// raw handles one fsnotify event, unless a test drops it.
func (w *Watcher) raw(ev fsnotify.Event) {
	if w.rawFilter != nil && !w.rawFilter(ev) {
		return
	}
	w.handle(ev)
}

// watchError handles an error fsnotify reports.
func (w *Watcher) watchError(err error) {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		w.log.Warn("file watch: the inotify event queue overflowed, so events were lost " +
			"(raise fs.inotify.max_queued_events to make this rarer); rescanning the watched folders")
		n := w.rescan()
		w.log.Warn("file watch: rescan after overflow done", "changes", n, "folders", len(w.dirs))
		return
	}
	w.log.Error("file watch: inotify error", "err", err)
}

// settle applies what the last step deferred: roots to resolve again and
// watches to move to polling.
func (w *Watcher) settle() {
	for len(w.resolveQ) > 0 || len(w.degrade) > 0 {
		for len(w.resolveQ) > 0 {
			r := w.resolveQ[0]
			w.resolveQ = w.resolveQ[1:]
			if w.watches[r.w.key] == r.w && !w.polling[r.w] {
				w.resolve(r, true)
			}
		}
		for wt, err := range w.degrade {
			delete(w.degrade, wt)
			if w.watches[wt.key] == wt && !w.polling[wt] {
				w.log.Error(fmt.Sprintf("file watch of %s: cannot watch with inotify%s", wt.name, limitHint(err)),
					"err", err, "poll_interval", w.opts.PollInterval)
				w.teardown(wt)
				w.startPolling(wt, false)
			}
		}
	}
}

// flushDue fires the windows whose time has come.
func (w *Watcher) flushDue() {
	now := w.now()
	for wt := range w.open {
		if wt.win == nil {
			delete(w.open, wt)
			continue
		}
		if !now.Before(wt.win.deadline(wt.spec)) {
			delete(w.open, wt)
			w.flush(wt)
		}
	}
}

// resetTimer sets the timer to the earliest window deadline.
func (w *Watcher) resetTimer() {
	var next time.Time
	for wt := range w.open {
		if wt.win == nil {
			continue
		}
		if d := wt.win.deadline(wt.spec); next.IsZero() || d.Before(next) {
			next = d
		}
	}
	w.timer.Stop()
	select {
	case <-w.timer.C:
	default:
	}
	if !next.IsZero() {
		w.timer.Reset(max(next.Sub(w.now()), 0))
	}
}

// fireQueue is an unbounded FIFO of jobs for the firing goroutine, so the
// watcher's goroutine never waits for the engine or the disk (inotify's
// queue would overflow meanwhile). A job is told whether the watcher is
// stopping: fires are then dropped, snapshot writes still done.
type fireQueue struct {
	mu   sync.Mutex
	jobs []fireJob
	wake chan struct{}
}

type fireJob func(ctx context.Context, stopping bool)

func (q *fireQueue) init() { q.wake = make(chan struct{}, 1) }

func (q *fireQueue) push(job fireJob) {
	q.mu.Lock()
	q.jobs = append(q.jobs, job)
	q.mu.Unlock()
	q.signal()
}

func (q *fireQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *fireQueue) pop() (fireJob, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.jobs) == 0 {
		return nil, false
	}
	job := q.jobs[0]
	q.jobs[0] = nil
	q.jobs = q.jobs[1:]
	return job, true
}

// fireLoop runs the jobs in order until Stop, then runs what is left
// as stopping.
func (w *Watcher) fireLoop() {
	defer close(w.fireDone)
	for {
		stopping := false
		select {
		case <-w.runDone:
			stopping = true
		default:
		}
		for {
			job, ok := w.fires.pop()
			if !ok {
				break
			}
			job(w.fireCtx, stopping)
		}
		if stopping {
			return
		}
		select {
		case <-w.fires.wake:
		case <-w.runDone:
		}
	}
}
