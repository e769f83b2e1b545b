package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/backoff"
	"github.com/hookd/hookd/internal/redirect"
)

// Outcomes of a notification, as Options.Count hears them.
const (
	Delivered     = "delivered"
	Undeliverable = "undeliverable"
	Dropped       = "dropped"   // the queue was full
	Cancelled     = "cancelled" // a notify:before handler cancelled it
)

// Options configure a Notifier. Zero fields take the defaults.
type Options struct {
	Targets    []engine.NotifyTarget // daemon-wide targets, for hooks that set none
	Getenv     func(string) string   // resolves url_env (default os.Getenv)
	Client     *http.Client          // default: a client with a 10s timeout; redirects follow internal/redirect's rule either way
	Logger     *slog.Logger          // default slog.Default()
	QueueSize  int                   // notifications waiting for each webhook URL's worker (default 64)
	Attempts   int                   // tries per notification (default 5)
	Backoff    time.Duration         // wait before the first retry, doubled each time (default 1s)
	MaxBackoff time.Duration         // longest wait between tries (default 1m)
	Count      func(outcome string)  // told the outcome of every notification (metrics), after it is logged
	// Note is given a note for the record of run id (of hook): why a
	// notification about it was dropped. It must not block (the engine's
	// NoteRun).
	Note func(hook, id, note string)
	// Lifecycle holds the notify:* handlers: notify:before, called before
	// each delivery, may amend the summary or cancel the notification;
	// notify:delivered and notify:failed are told how it ended.
	Lifecycle *engine.Registry
	// MaxDepth is the engine's event chain limit (default
	// engine.DefaultMaxEventDepth): the notify:delivered and notify:failed
	// handlers are not called for a run that deep, so that a handler
	// that fires a hook whose notification fails in turn cannot loop.
	MaxDepth int
	// Clock times the waits between tries and reads an HTTP-date
	// Retry-After (default clock.System): the engine's clock.
	Clock clock.Clock
}

// Notifier delivers notifications in the background. Start it, feed it
// with Observe, and Stop it.
type Notifier struct {
	o      Options
	log    *slog.Logger
	daemon atomic.Pointer[[]*target]               // hookd.yaml's targets, for hooks that set none
	hooks  atomic.Pointer[map[string][]*target]    // hooks that set notify:
	byName atomic.Pointer[map[string]*engine.Hook] // every hook, for notify:before's payload

	mu      sync.Mutex
	lanes   map[string]*lane    // by webhook URL
	started bool                // lanes made from now on start their worker at once
	pending map[string][]string // notes of drops about runs still running, by run id

	ctx      context.Context
	cancel   context.CancelFunc
	stopping chan struct{} // closed (under mu) by Stop: nothing is queued after it
	wg       sync.WaitGroup
	start    sync.Once
	stop     sync.Once
}

// lane is the queue and worker of one webhook URL: a webhook that is
// slow, hung or down delays only its own notifications.
type lane struct {
	queue  chan *job
	retire chan struct{} // closed once no target sends to the URL: the worker delivers what is queued and ends
}

// maxPendingNotes bounds Notifier.pending: runs still running with a
// dropped notification whose note waits for the run's end.
const maxPendingNotes = 1024

// target is a NotifyTarget with its URL resolved.
type target struct {
	label  string // for logs: the name, or "FORMAT #N"
	url    string // "" when url_env is unset
	env    string
	format string
	on     []string
	tmpl   string // template: the message's text ("" for the default)
}

type job struct {
	msg   *Message // shared by the jobs of one event
	t     *target
	depth int // the run's event chain depth (Payload.Depth)
}

// New builds a notifier; it delivers nothing until Start.
func New(o Options) *Notifier {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	// A webhook's URL is its credential: a redirect to another origin is
	// refused, and none carries the URL as Referer.
	o.Client = redirect.Client(o.Client)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 64
	}
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = engine.DefaultMaxEventDepth
	}
	if o.Count == nil {
		o.Count = func(string) {}
	}
	if o.Note == nil {
		o.Note = func(string, string, string) {}
	}
	n := &Notifier{o: o, log: o.Logger, lanes: map[string]*lane{}, pending: map[string][]string{}, stopping: make(chan struct{})}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.SetTargets(o.Targets)
	empty := map[string][]*target{}
	n.hooks.Store(&empty)
	none := map[string]*engine.Hook{}
	n.byName.Store(&none)
	return n
}

// SetTargets replaces the daemon-wide targets (hookd.yaml's notify:,
// reloaded); notifications already queued go where they were going.
func (n *Notifier) SetTargets(ts []engine.NotifyTarget) {
	t := n.resolve("", ts)
	n.daemon.Store(&t)
	n.retireLanes()
}

// SetHooks takes the per-hook targets of hooks (those with NotifySet); the
// others use the daemon-wide ones. Call it again when the hooks change.
func (n *Notifier) SetHooks(hooks []*engine.Hook) {
	m := map[string][]*target{}
	all := make(map[string]*engine.Hook, len(hooks))
	for _, h := range hooks {
		all[h.Name] = h
		if h.NotifySet {
			m[h.Name] = n.resolve(h.Name, h.Notify)
		}
	}
	n.hooks.Store(&m)
	n.byName.Store(&all)
	n.retireLanes()
}

// retireLanes ends the lanes of URLs no target has any more (after a
// reload): each delivers what it holds, then its worker ends. Before
// Start nothing is retired (a lane without a worker would hold its
// notifications for ever); the next change after Start does it.
func (n *Notifier) retireLanes() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.started || n.hooks.Load() == nil {
		return
	}
	used := map[string]bool{}
	for _, t := range *n.daemon.Load() {
		used[t.url] = true
	}
	for _, ts := range *n.hooks.Load() {
		for _, t := range ts {
			used[t.url] = true
		}
	}
	for url, l := range n.lanes {
		if !used[url] {
			delete(n.lanes, url)
			close(l.retire)
		}
	}
}

// resolve reads the targets' URLs, warning (without the URL) about those
// whose url_env is unset.
func (n *Notifier) resolve(hook string, ts []engine.NotifyTarget) []*target {
	out := make([]*target, 0, len(ts))
	for i, t := range ts {
		rt := &target{label: t.Name, url: t.URL, env: t.URLEnv, format: t.Format, on: t.On, tmpl: t.Template}
		if rt.format == "" {
			rt.format = engine.NotifyGeneric
		}
		if len(rt.on) == 0 {
			rt.on = []string{engine.OutcomeFailed}
		}
		if rt.label == "" {
			rt.label = fmt.Sprintf("%s #%d", rt.format, i+1)
		}
		if hook != "" {
			rt.label = hook + ": " + rt.label
		}
		if t.URLEnv != "" {
			rt.url = n.o.Getenv(t.URLEnv)
			if rt.url == "" {
				n.log.Warn("notify target has no URL: its environment variable is empty; its notifications are undeliverable",
					"target", rt.label, "url_env", t.URLEnv)
			}
		}
		out = append(out, rt)
	}
	return out
}

// Start starts the delivery workers, one per webhook URL. It does not
// block.
func (n *Notifier) Start() {
	n.start.Do(func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.started = true
		for _, l := range n.lanes {
			n.wg.Add(1)
			go n.work(l)
		}
	})
}

// Stop stops taking notifications, delivers those queued until ctx is
// done, then abandons the rest (counted undeliverable) and waits for the
// workers. It is safe to call more than once.
func (n *Notifier) Stop(ctx context.Context) {
	n.stop.Do(func() {
		n.mu.Lock()
		close(n.stopping)
		lanes := make([]*lane, 0, len(n.lanes))
		for _, l := range n.lanes {
			lanes = append(lanes, l)
		}
		n.mu.Unlock()
		done := make(chan struct{})
		go func() { n.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			n.cancel()
			<-done
		}
		n.cancel()
		// Without workers (never started), what is queued is abandoned.
		for _, l := range lanes {
			for len(l.queue) > 0 {
				n.fail(<-l.queue, 0, errors.New("hookd stopped before it was delivered"))
			}
		}
	})
}

// Observe queues the notifications an engine event calls for. It is an
// engine.Subscribe callback: it never blocks; a full queue drops the
// notification (logged, counted and noted on the run).
func (n *Notifier) Observe(ev *engine.Event) {
	outcome := engine.OutcomeOf(ev)
	if outcome == "" || ev.Source != "engine" || ev.Outcome == nil {
		return
	}
	if outcome != engine.OutcomeStarted {
		n.flushNotes(ev.Outcome.Run)
	}
	if ev.Outcome.Intermediate {
		return // an attempt a retry follows is reported by the last (retry.notify: final)
	}
	select {
	case <-n.stopping:
		return
	default:
	}
	run := ev.Outcome.Run
	targets := *n.daemon.Load()
	if ts, ok := (*n.hooks.Load())[run.Hook]; ok {
		targets = ts
	}
	var msg *Message
	for _, t := range targets {
		if !engine.OutcomeMatches(t.on, outcome) {
			continue
		}
		if msg == nil {
			msg = messageFrom(ev)
		}
		j := &job{msg: msg, t: t, depth: run.Depth}
		if t.url == "" {
			// Observe must not block: the notify:failed handlers run on a
			// goroutine of their own.
			n.failAsync(j, fmt.Errorf("no URL: environment variable %s is empty", t.env))
			continue
		}
		if queued, stopped := n.enqueue(j); !queued && !stopped {
			n.dropped(j, run, outcome)
		}
	}
}

// enqueue puts j in the lane of its target's URL, made (and its worker
// started) the first time the URL is used. It reports whether j was
// queued, and whether the notifier is stopped (then nothing is).
func (n *Notifier) enqueue(j *job) (queued, stopped bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.stopping:
		return false, true
	default:
	}
	l := n.lanes[j.t.url]
	if l == nil {
		l = &lane{queue: make(chan *job, n.o.QueueSize), retire: make(chan struct{})}
		n.lanes[j.t.url] = l
		if n.started {
			n.wg.Add(1)
			go n.work(l)
		}
	}
	select {
	case l.queue <- j:
		return true, false
	default:
		return false, false
	}
}

// dropped logs, counts and notes a notification its target's queue had
// no room for. The note goes on the run's record; that of a run still
// running (a started notification) waits for the run's end, whose final
// record would replace it.
func (n *Notifier) dropped(j *job, run *engine.Run, outcome string) {
	n.log.Warn("notification dropped: the target's queue is full", "target", j.t.label, "hook", run.Hook,
		"run", run.ID, "outcome", outcome, "queue", n.o.QueueSize)
	n.o.Count(Dropped)
	note := fmt.Sprintf("notification of %s to %s dropped: its queue of %d was full (the webhook is slow or not answering)",
		outcome, j.t.label, n.o.QueueSize)
	if outcome != engine.OutcomeStarted {
		n.o.Note(run.Hook, run.ID, note)
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.pending[run.ID]; ok || len(n.pending) < maxPendingNotes {
		n.pending[run.ID] = append(n.pending[run.ID], note)
	}
}

// flushNotes notes on run's record the drops that waited for its end.
func (n *Notifier) flushNotes(run *engine.Run) {
	n.mu.Lock()
	notes := n.pending[run.ID]
	delete(n.pending, run.ID)
	n.mu.Unlock()
	for _, note := range notes {
		n.o.Note(run.Hook, run.ID, note)
	}
}

// work is the worker of lane l: it delivers l's notifications one at a
// time until the lane is retired or the notifier stops, then delivers
// what is queued (as long as Stop's grace lasts: after it, each fails at
// once) and ends.
func (n *Notifier) work(l *lane) {
	defer n.wg.Done()
	for {
		select {
		case j := <-l.queue:
			n.deliver(j)
			continue
		case <-l.retire:
		case <-n.stopping:
		case <-n.ctx.Done():
		}
		for {
			select {
			case j := <-l.queue:
				n.deliver(j)
			default:
				return
			}
		}
	}
}

// deliver builds and sends one notification, retrying with backoff.
func (n *Notifier) deliver(j *job) {
	if !n.before(j) {
		return
	}
	msg := j.msg
	if j.t.tmpl != "" {
		text, err := msg.render(j.t.tmpl)
		if err != nil {
			// The default text says what happened; the log says why the
			// template did not.
			n.log.Warn("notification template did not render; sending the default text", "target", j.t.label,
				"hook", msg.Hook, "run", msg.RunID, "err", err)
		} else {
			cp := *msg
			cp.Custom = text
			msg = &cp
		}
	}
	body, err := msg.body(j.t.format)
	if err != nil {
		n.fail(j, 0, fmt.Errorf("encode message: %w", err))
		return
	}
	policy := backoff.Policy{Base: n.o.Backoff, Max: n.o.MaxBackoff}
	for attempt := 1; ; attempt++ {
		retry, wait, err := n.post(j.t, body)
		if err == nil {
			n.log.Debug("notification delivered", "target", j.t.label, "hook", j.msg.Hook,
				"run", j.msg.RunID, "attempts", attempt)
			n.o.Count(Delivered)
			n.after(j, engine.PointNotifyDelivered, attempt, nil)
			return
		}
		if !retry || attempt >= n.o.Attempts {
			n.fail(j, attempt, err)
			return
		}
		wait = min(max(wait, policy.Delay(attempt, 0)), n.o.MaxBackoff)
		n.log.Debug("notification failed; retrying", "target", j.t.label, "attempt", attempt, "in", wait, "err", err)
		t := n.o.Clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-n.ctx.Done():
			t.Stop()
			n.fail(j, attempt, fmt.Errorf("hookd stopped before it was delivered (last try: %w)", err))
			return
		}
	}
}

// before calls the notify:before handlers for j: a cancel drops the
// notification (logged, counted Cancelled), a summary change replaces the
// message's summary for this target. It reports whether to deliver.
func (n *Notifier) before(j *job) bool {
	lc := n.o.Lifecycle
	if !lc.Active(engine.PointNotifyBefore) {
		return true
	}
	raw, err := json.Marshal(j.msg)
	if err != nil {
		n.fail(j, 0, fmt.Errorf("encode message: %w", err))
		return false
	}
	o := lc.Call(n.ctx, engine.PointNotifyBefore, &engine.Payload{Hook: n.hook(j.msg.Hook), RunID: j.msg.RunID, Notification: raw,
		NotifyTarget: j.t.label, Depth: j.depth})
	if o.Cancelled {
		n.log.Info("notification cancelled by a lifecycle handler", "target", j.t.label, "hook", j.msg.Hook,
			"run", j.msg.RunID, "handler", o.By, "reason", o.Reason)
		n.o.Count(Cancelled)
		return false
	}
	if s, ok := o.Changes[engine.ChangeSummary].(string); ok {
		m := *j.msg // shared by the event's other targets
		m.Summary = s
		j.msg = &m
	}
	return true
}

// post sends body once. It says whether a failure is worth retrying and
// how long the server asked to wait.
func (n *Notifier) post(t *target, body []byte) (retry bool, wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(n.ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, errors.New("bad webhook URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "hookd")
	resp, err := n.o.Client.Do(req)
	if err != nil {
		var refused *redirect.RefusedError
		return !errors.As(err, &refused), 0, scrubURL(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, 0, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		wait, _ = backoff.RetryAfter(resp.Header, n.o.Clock.Now())
		return true, wait, fmt.Errorf("webhook answered %s", resp.Status)
	}
	return false, 0, fmt.Errorf("webhook answered %s", resp.Status)
}

// fail logs and counts a notification that was not delivered, and calls
// the notify:failed handlers.
func (n *Notifier) fail(j *job, attempts int, err error) {
	n.undeliverable(j, attempts, err)
	n.after(j, engine.PointNotifyFailed, attempts, err)
}

// failAsync is fail for a caller that must not block (Observe): the
// notify:failed handlers run on a goroutine of their own.
func (n *Notifier) failAsync(j *job, err error) {
	n.undeliverable(j, 0, err)
	go n.after(j, engine.PointNotifyFailed, 0, err)
}

// undeliverable logs and counts a notification that was not delivered.
func (n *Notifier) undeliverable(j *job, attempts int, err error) {
	n.log.Warn("notification undeliverable", "target", j.t.label, "hook", j.msg.Hook,
		"run", j.msg.RunID, "outcome", j.msg.Outcome, "attempts", attempts, "err", err.Error())
	n.o.Count(Undeliverable)
}

// after calls the handlers of notify:delivered or notify:failed (point)
// for j, unless j's run is MaxDepth deep: a handler that fires a hook
// (hookd fire, with its HOOKD_DEPTH) starts a run one deeper, and a
// chain of failing notifications stops there, logged.
func (n *Notifier) after(j *job, point engine.Point, attempts int, err error) {
	lc := n.o.Lifecycle
	if !lc.Active(point) {
		return
	}
	if j.depth >= n.o.MaxDepth {
		n.log.Warn("notification handlers not called: the run is a chain of runs too deep (a handler that notifies loops?)",
			"point", point, "target", j.t.label, "hook", j.msg.Hook, "run", j.msg.RunID, "depth", j.depth, "limit", n.o.MaxDepth)
		return
	}
	raw, merr := json.Marshal(j.msg)
	if merr != nil {
		n.log.Warn("notification handlers not called: encode message", "point", point, "err", merr)
		return
	}
	p := &engine.Payload{Hook: n.hook(j.msg.Hook), RunID: j.msg.RunID, Notification: raw, NotifyTarget: j.t.label,
		NotifyAttempts: attempts, Depth: j.depth}
	if err != nil {
		p.NotifyError = err.Error()
	}
	lc.Call(context.WithoutCancel(n.ctx), point, p)
}

// hook returns the hook a notification is about, for handlers' payloads
// (its name alone when it is no longer loaded).
func (n *Notifier) hook(name string) *engine.Hook {
	if h := (*n.byName.Load())[name]; h != nil {
		return h
	}
	return &engine.Hook{Name: name}
}

// scrubURL drops the URL from an HTTP client error: it may hold a secret.
func scrubURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s webhook: %w", ue.Op, ue.Err)
	}
	return err
}
