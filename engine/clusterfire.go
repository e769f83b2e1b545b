package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A manual fire (hookd fire, POST /v1/hooks/{name}/fire, the dashboard,
// a model's fire_hook) on a cluster node that does not schedule is
// decided by the scheduler, like an event: the node stores a fire
// request (Cluster.RequestFire) before it answers, the scheduler decides
// it through the gates as its own fire (Cluster.DecideFires: the answer
// is stored in the transaction that holds the request) and the node
// reads the answer back: the run started, queued or refused, with the
// gate that refused it.

// FireRequest is a fire stored by a node that does not schedule.
type FireRequest struct {
	// ID is the request's, and the id of the run the fire records (unless
	// it merges into the hook's pending run), so that a scheduler taking a
	// request over after a failover sees whether it was decided.
	ID    string         `json:"id"`
	Hook  string         `json:"hook"`
	Event map[string]any `json:"event,omitempty"`
	Force bool           `json:"force,omitempty"`
	// EvenDisabled: FireOptions.EvenDisabled.
	EvenDisabled bool `json:"even_disabled,omitempty"`
	// TraceParent: FireOptions.TraceParent.
	TraceParent TraceParent `json:"traceparent,omitempty"`
	// TraceLink: FireOptions.TraceLink.
	TraceLink TraceParent `json:"trace_link,omitempty"`
	// IgnoreWhere: FireOptions.IgnoreWhere.
	IgnoreWhere bool   `json:"ignore_where,omitempty"`
	Trigger     string `json:"trigger,omitempty"`
	Depth       int    `json:"depth,omitempty"`
	Node        string `json:"node"` // the node it was made on
}

// FireAnswer is the scheduler's decision on a FireRequest.
type FireAnswer struct {
	Run      *Run       `json:"run,omitempty"`       // the run as the scheduler recorded it: started, queued or refused
	Gate     *GateError `json:"gate,omitempty"`      // the gate that refused it
	NotFound bool       `json:"not_found,omitempty"` // the scheduler has no hook of that name
	Error    string     `json:"error,omitempty"`     // another refusal
}

// ended is closed, and replaced, each time a node says a run ended or a
// fire was answered (WakeDone): what waits on the store reads it again.
type ended struct {
	mu sync.Mutex
	ch chan struct{}
}

func (d *ended) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch == nil {
		d.ch = make(chan struct{})
	}
	return d.ch
}

func (d *ended) signal() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch != nil {
		close(d.ch)
		d.ch = nil
	}
}

// fireWait is how long a node waits for the scheduler to decide a fire
// it forwarded: long enough for a failover (Timeout and two intervals)
// and the decision.
func fireWait(cl Cluster) time.Duration { return 2*cl.Timeout() + 2*cl.Interval() }

// forwardFire has the scheduler decide a fire: it stores the request and
// waits for the answer. A request no scheduler took within fireWait, or
// whose ctx ended first, is withdrawn: nothing is fired.
func (e *Engine) forwardFire(ctx context.Context, name string, opt FireOptions) (*Run, error) {
	cl := e.cfg.Cluster
	req := FireRequest{ID: NewID(), Hook: name, Event: opt.Event, Force: opt.Force, EvenDisabled: opt.EvenDisabled, IgnoreWhere: opt.IgnoreWhere, Trigger: opt.Trigger, Depth: opt.Depth, Node: cl.Node(),
		TraceParent: opt.TraceParent, TraceLink: opt.TraceLink}
	if err := cl.RequestFire(ctx, req); err != nil {
		return nil, fmt.Errorf("fire %s: %w", name, err)
	}
	bg := context.WithoutCancel(ctx)
	limit := fireWait(cl)
	deadline := e.cfg.Clock.NewTimer(limit)
	defer deadline.Stop()
	tick := e.cfg.Clock.NewTicker(cl.Interval())
	defer tick.Stop()
	var gone error // why the request was withdrawn, once it is tried
	for {
		woken := e.ended.wait()
		ans, ok, err := cl.FireAnswer(bg, req.ID)
		if err != nil {
			return nil, fmt.Errorf("fire %s: %w", name, err)
		}
		if ok {
			return ans.result(name) // decided, even while being withdrawn: the run is real
		}
		if gone != nil {
			// Neither withdrawn nor answered: the scheduler decided it
			// meanwhile and answers it in the same transaction.
			select {
			case <-woken:
			case <-tick.C():
			}
			continue
		}
		select {
		case <-woken:
			continue
		case <-tick.C():
			continue
		case <-ctx.Done():
			gone = ctx.Err()
		case <-deadline.C():
			_, node := e.Scheduler()
			gone = fmt.Errorf("%w: no scheduler decided the fire of %s within %s (scheduler: %s)", ErrNotScheduler, name, limit, node)
		}
		withdrawn, err := cl.WithdrawFire(bg, req.ID)
		if err != nil {
			return nil, fmt.Errorf("fire %s: %w", name, err)
		}
		if withdrawn {
			return nil, fmt.Errorf("%w; nothing was fired", gone)
		}
	}
}

// result is the answer as Fire returns it.
func (a FireAnswer) result(name string) (*Run, error) {
	switch {
	case a.NotFound:
		return nil, fmt.Errorf("%w: no hook named %q on the scheduling node (its hooks.d differs)", ErrNotFound, name)
	case a.Gate != nil:
		return a.Run, a.Gate
	case a.Error != "":
		return a.Run, fmt.Errorf("fire %s on the scheduling node: %s", name, a.Error)
	case a.Run == nil:
		return nil, fmt.Errorf("fire %s: the scheduling node answered no run", name)
	}
	return a.Run, nil
}

// decideFires, on the scheduler, decides the fires other nodes stored.
func (e *Engine) decideFires(ctx context.Context) {
	if _, err := e.cfg.Cluster.DecideFires(ctx, e.decideFire); err != nil && ctx.Err() == nil {
		e.log.Warn("decide fires stored by other nodes", "err", err)
	}
}

// decideFire fires a stored request as this node's own fire. An error
// leaves the request for the next scheduler: this node does not
// schedule any more, or stops.
func (e *Engine) decideFire(ctx context.Context, req FireRequest) (FireAnswer, error) {
	r, err := e.cfg.Store.GetRun(ctx, req.ID)
	if err == nil {
		// Decided by a scheduler that stopped before it stored the answer.
		a := FireAnswer{Run: r}
		if r.Gate != "" {
			a.Gate = &GateError{Gate: r.Gate, Hook: r.Hook, Detail: "decided before a failover: " + r.Reason}
		}
		return a, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return FireAnswer{}, err
	}
	// Merged into a pending run by a scheduler that stopped before it
	// stored the answer: that run is the answer (the fire is in it).
	if id, err := e.cfg.Cluster.FireMergedInto(ctx, req.ID); err == nil {
		r, err := e.cfg.Store.GetRun(ctx, id)
		if err != nil {
			return FireAnswer{}, err
		}
		return FireAnswer{Run: r}, nil
	} else if !errors.Is(err, ErrNotFound) {
		return FireAnswer{}, err
	}
	run, err := e.Fire(ctx, req.Hook, FireOptions{Event: req.Event, Force: req.Force, EvenDisabled: req.EvenDisabled, IgnoreWhere: req.IgnoreWhere, Trigger: req.Trigger, Depth: req.Depth, id: req.ID,
		TraceParent: req.TraceParent, TraceLink: req.TraceLink})
	var gate *GateError
	switch {
	case err == nil:
		return FireAnswer{Run: run}, nil
	case errors.As(err, &gate):
		return FireAnswer{Run: run, Gate: gate}, nil
	case errors.Is(err, ErrNotScheduler), errors.Is(err, ErrStopped), ctx.Err() != nil:
		return FireAnswer{}, err
	case errors.Is(err, ErrNotFound):
		return FireAnswer{NotFound: true}, nil
	}
	return FireAnswer{Run: run, Error: err.Error()}, nil
}

// waitStored waits, on a cluster node, for a run this node's loop does
// not follow (another node decided it) to be final in the store: woken
// when a node says a run ended, and every Interval.
func (e *Engine) waitStored(ctx context.Context, runID string) (*Run, error) {
	tick := e.cfg.Clock.NewTicker(e.cfg.Cluster.Interval())
	defer tick.Stop()
	for {
		woken := e.ended.wait()
		r, err := e.cfg.Store.GetRun(ctx, runID)
		if err != nil || r.Status.Final() {
			return r, err
		}
		select {
		case <-woken:
		case <-tick.C():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
