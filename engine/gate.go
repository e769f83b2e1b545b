package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Gate names, also the first word of the Reason of the records they leave.
const (
	GateDisabled   = "disabled"
	GatePaused     = "paused"
	GateInFlight   = "in_flight"
	GateCooldown   = "cooldown"
	GateQueueFull  = "queue_full"
	GateEventDepth = "event_depth"
	// GateFromTool refuses a trigger that a model's tool call made
	// (fire_hook, emit_event, or an event a run started that way emitted;
	// see FromTool) for a hook that does not accept one
	// (Hook.AcceptFromTools).
	GateFromTool = "from_tool"
	// GateSandboxUnavailable refuses a trigger of a hook that starts
	// processes from untrusted input (Hook.NeedsContainment) where
	// hookd cannot contain them (files or the network cannot be
	// confined, sandbox.Status.Contained) and hookd.yaml does not set
	// sandbox: off.
	GateSandboxUnavailable = "sandbox_unavailable"
	// GateStoreStalled refuses a trigger while the store does not take
	// writes (Engine.StoreStalled): a run whose start cannot be recorded
	// does not start. A schedule slot is not refused one by one: its
	// hook's slots are recorded in one missed record once the store
	// answers.
	GateStoreStalled = "store_stalled"
	// GateWhere refuses a fire with an event (FireOptions.Event) that the
	// hook's where: rejects, unless FireOptions.IgnoreWhere. It leaves no
	// record: an event the where: rejects starts nothing either.
	GateWhere = "where"
	// GateInvalidFile refuses every trigger of a hook whose file no
	// longer loads while the previous version it defined is kept
	// (Engine.SetBroken): its schedule goes on, but nothing runs a
	// definition its file no longer holds. Each slot is recorded so.
	GateInvalidFile = "invalid_file"
	// Not gates, but what else leaves a skipped record: slots that passed
	// while hookd was down, suspended or waiting for its store (the
	// record says which), and a slot that fired before.
	GateMissed    = "missed"
	GateSlotTaken = "slot_taken"
)

// GateError says which gate refused a trigger and how to get past it.
type GateError struct {
	Gate      string
	Hook      string
	RunID     string        // the run in flight (in_flight)
	Remaining time.Duration // time left (cooldown)
	Detail    string        // the rest of the message
}

func (g *GateError) Error() string {
	switch g.Gate {
	case GateInFlight:
		return fmt.Sprintf("in flight: run %s of %s is still running; %s", g.RunID, g.Hook, g.Detail)
	case GateCooldown:
		return fmt.Sprintf("cooldown: %s left; %s", g.Remaining.Round(time.Second), g.Detail)
	}
	return fmt.Sprintf("%s: %s", g.Gate, g.Detail)
}

// whereRefusal is the GateWhere refusal of a fire with an event h's
// where: rejected (err: its condition could not be evaluated).
func whereRefusal(h *Hook, err error) *GateError {
	detail := fmt.Sprintf("the event does not match hook %s's where: %s; --ignore-where fires it anyway", h.Name, whereText(h))
	if err != nil {
		detail = fmt.Sprintf("hook %s's where: could not be evaluated (%s); --ignore-where fires it anyway", h.Name, err.Error())
	}
	return &GateError{Gate: GateWhere, Hook: h.Name, Detail: detail}
}

// reason is the text recorded on the run the gate refused.
func (g *GateError) reason() string {
	switch g.Gate {
	case GateInFlight:
		return fmt.Sprintf("%s: run %s was still running", g.Gate, g.RunID)
	case GateCooldown:
		return fmt.Sprintf("%s: %s left", g.Gate, g.Remaining.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: %s", g.Gate, g.Detail)
}

// cancelCause is the cause a run's context is cancelled with; it says what
// the run's record becomes.
type cancelCause struct {
	status Status
	cause  Cause
	reason string
}

func (c *cancelCause) Error() string { return c.reason }

// forcedStop is the cause Engine.Abort gives: a cancelCause that also
// matches ErrForcedStop.
type forcedStop struct{ *cancelCause }

func (f forcedStop) Unwrap() error        { return f.cancelCause }
func (f forcedStop) Is(target error) bool { return target == ErrForcedStop }

// ErrForcedStop matches (errors.Is) the cause of a run context ended by
// Engine.Abort: a command then kills its process group with SIGKILL at
// once instead of SIGTERM and a grace period.
var ErrForcedStop = errors.New("engine: forced stop")

// StopCause says why a run's context ended (timeout, cancel_previous,
// shutdown), or "" while it has not ended or when the engine did not end
// it. The model stage uses it to record how it stopped.
func StopCause(ctx context.Context) Cause {
	if ctx.Err() == nil {
		return ""
	}
	if cc, ok := errors.AsType[*cancelCause](context.Cause(ctx)); ok {
		return cc.cause
	}
	return ""
}
