package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/triggers"
)

func init() {
	register("emit_event",
		"Publish an event on hookd's event bus, of a type this hook's file allows. Hooks whose event trigger matches its type, "+
			"and that accept events from a model's tool call, run. "+
			"Returns, for each hook the event matched, the run it started (or queued, and why) or the gate that refused it and why. "+
			"Types are dot-separated words, like deploy.finished; hook.*, hookd.*, file.changed and folder.changed are reserved for hookd.",
		`{"type":"object","properties":{
			"type":{"type":"string","maxLength":200,"description":"event type, e.g. report.ready"},
			"data":{"type":"object","description":"the event's payload"}
		},"required":["type"],"additionalProperties":false}`,
		emitEvent)
	register("fire_hook",
		"Fire a hook by name, one of those this hook's file allows, through the same gates as a manual fire "+
			"(a hook already running, in its cooldown, or that does not accept runs asked for by a model, is refused with the reason). "+
			"Returns the new run's id.",
		`{"type":"object","properties":{
			"hook":{"type":"string","description":"the hook's name"},
			"event":{"type":"object","description":"payload the fired hook sees as {{event}}"}
		},"required":["hook"],"additionalProperties":false}`,
		fireHook)
}

type emitArgs struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

func emitEvent(ctx context.Context, env *engine.ToolEnv, a *emitArgs) (string, error) {
	if err := engine.ValidateEventType(a.Type); err != nil {
		return "", fmt.Errorf("use dot-separated words of letters, digits, '_', '-' and ':': %w", err)
	}
	switch {
	case engine.ReservedEventType(a.Type):
		return "", fmt.Errorf("type %q: %s events are hookd's own", a.Type, engine.ReservedEventTypes)
	case env.Emit == nil:
		return "", errors.New("events cannot be published from this run")
	case !mayEmit(env.Hook, a.Type):
		return "", fmt.Errorf("type %q is not one this hook may publish (%s)", a.Type, targets(env.Hook, "emit_event"))
	}
	if a.Data == nil {
		a.Data = map[string]any{}
	}
	em, err := env.Emit(ctx, a.Type, a.Data)
	if err != nil {
		return "", err
	}
	// The model is told what became of each hook the event matched, in
	// the words of `hookd emit`: the run started or queued, or the gate
	// that refused it and why.
	switch {
	case em.Elsewhere:
		return fmt.Sprintf("event %s published; %s", a.Type, engine.EmittedElsewhere), nil
	case len(em.Runs) == 0 && len(em.Refused) == 0:
		return fmt.Sprintf("event %s published; it ran nothing: %s", a.Type, em.Count(a.Type)), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "event %s published; for the hooks it matched: %s", a.Type, em.Count(a.Type))
	for _, l := range em.Lines() {
		b.WriteString("\n" + l)
	}
	return b.String(), nil
}

type fireArgs struct {
	Hook  string         `json:"hook"`
	Event map[string]any `json:"event"`
}

func fireHook(ctx context.Context, env *engine.ToolEnv, a *fireArgs) (string, error) {
	if env.Fire == nil {
		return "", errors.New("hooks cannot be fired from this run")
	}
	if env.Hook != nil && a.Hook == env.Hook.Name {
		return "", fmt.Errorf("hook %s is this run's own hook; it cannot fire itself", a.Hook)
	}
	if env.Hook == nil || !slices.Contains(env.Hook.FireHooks, a.Hook) {
		return "", fmt.Errorf("hook %q is not one this hook may fire (%s)", a.Hook, targets(env.Hook, "fire_hook"))
	}
	r, err := env.Fire(ctx, a.Hook, a.Event)
	if err != nil {
		var ge *engine.GateError
		if errors.As(err, &ge) {
			return "", fmt.Errorf("refused: %w", err)
		}
		return "", err
	}
	return fmt.Sprintf("fired %s: run %s, %s", a.Hook, r.ID, describeStatus(r)), nil
}

// mayEmit reports whether one of h's emit_event patterns matches typ.
func mayEmit(h *engine.Hook, typ string) bool {
	if h == nil {
		return false
	}
	return slices.ContainsFunc(h.EmitTypes, func(p string) bool { return triggers.MatchPattern(p, typ) })
}

// targets describes what h lets tool reach, for the model and the record.
func targets(h *engine.Hook, tool string) string {
	var list []string
	what := "hooks"
	switch {
	case h == nil:
	case tool == "fire_hook":
		list = h.FireHooks
	default:
		list, what = h.EmitTypes, "types"
	}
	if len(list) == 0 {
		return fmt.Sprintf("it lists none: the hook file gives them as `- %s: {%s: [...]}` in tools", tool, what)
	}
	return "it may reach: " + strings.Join(list, ", ")
}

func describeStatus(r *engine.Run) string {
	s := string(r.Status)
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s
}
