package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrPreview is returned to a step that tries to publish an event during
// a preview: a dry run publishes nothing.
var ErrPreview = errors.New("engine: preview: events are not published")

// PreviewReason is the Reason of a preview whose run would go on to the
// model with the prompt it rendered.
const PreviewReason = "preview: the model would be called with this prompt"

// previewEmit stands in for a step's event publisher during a preview.
func previewEmit(ctx context.Context, typ string, data map[string]any) (*Emitted, error) {
	return nil, fmt.Errorf("%w (would emit %s)", ErrPreview, typ)
}

// Preview is a dry run of the hook named name, fired by hand with event
// as its payload: it runs the hook's steps, evaluates the short-circuits
// and renders the prompt with the same code as a real run, and returns
// the run record it would make. It calls no model, passes no gate (a
// disabled, paused or in-flight hook previews all the same), claims no
// slot, records nothing in the store and publishes no event (a step that
// emits gets ErrPreview). Secrets are redacted in what it returns.
//
// The outcome is in the run: StatusSkipped with the short-circuit's
// Reason; StatusCompleted for a hook that runs its steps only (Reason
// empty) or one that would call the model (Reason PreviewReason); or
// StatusFailed / StatusCancelled with Error as a real run would end. The
// prompt is rendered whenever the hook has one, also when a short-circuit
// applies; a prompt that fails to render then leaves Error set.
//
// Preview does not need the engine's loop: it works on an engine that was
// never started, which is how `hookd render` uses it.
func (e *Engine) Preview(ctx context.Context, name string, event map[string]any) (*Run, error) {
	h, prevStart, err := e.previewHook(ctx, name)
	if err != nil {
		return nil, err
	}
	now := e.cfg.Clock.Now()
	event = withPeriodic(h, "manual", event, now, prevStart)
	var payload json.RawMessage
	if event != nil {
		b, err := json.Marshal(event)
		if err != nil {
			return nil, fmt.Errorf("encode event payload: %w", err)
		}
		payload = b
	}
	run := &Run{
		ID: NewID(), Hook: h.Name, Project: h.Project, Trigger: "manual", Status: StatusRunning,
		Event: payload, QueuedAt: now, StartedAt: now,
	}
	rctx, cancel := e.runContext(ctx, h)
	defer cancel()
	red := e.redactor(h)
	if e.prepare(rctx, h, run, prevStart, red, h.ChildEnvs(e.cfg.Environ), nil) {
		run.Status, run.Reason = StatusCompleted, PreviewReason
	}
	redactRun(red, run)
	run.FinishedAt = e.cfg.Clock.Now()
	return run, nil
}

// previewHook returns the hook named name and its last start. A running
// loop knows the current definition (reloads included) and last start;
// an engine that was never started, or has stopped, has the hooks it was
// built with and the store's record.
func (e *Engine) previewHook(ctx context.Context, name string) (*Hook, time.Time, error) {
	if e.cancel != nil {
		var (
			h    *Hook
			last time.Time
		)
		err := e.do(ctx, func(s *state) {
			if ent := s.hooks[name]; ent != nil {
				h, last = ent.hook, ent.lastStart
			}
		})
		switch {
		case err == nil && h == nil:
			return nil, time.Time{}, e.noHook(name)
		case err == nil:
			return h, last, nil
		case !errors.Is(err, ErrStopped):
			return nil, time.Time{}, err
		}
	}
	for _, h := range e.hooks {
		if h.Name != name {
			continue
		}
		states, err := e.cfg.Store.HookStates(ctx)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("read hook state: %w", err)
		}
		return h, states[name].LastStart, nil
	}
	return nil, time.Time{}, e.noHook(name)
}

// noHook is noHook among the hooks e was built with.
func (e *Engine) noHook(name string) error {
	names := make([]string, len(e.hooks))
	for i, h := range e.hooks {
		names[i] = h.Name
	}
	return noHook(name, names)
}
