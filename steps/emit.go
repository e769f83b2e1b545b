package steps

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hookd/hookd/engine"
)

func init() {
	engine.RegisterStep("emit", engine.DeclaredKind{Build: newEmit,
		Fields: []string{"event_type", "runs", "refused", "count", "data"}})
}

type emitConfig struct {
	EventType string         `yaml:"event_type"`
	Data      map[string]any `yaml:"data"`
}

// emitStep publishes an event as its run, so that hooks can chain without
// a model: the event is stored, then matched against event triggers.
type emitStep struct {
	def  *engine.StepDef
	typ  string         // may hold placeholders
	data map[string]any // string values anywhere inside may hold placeholders
}

func newEmit(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c emitConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	if strings.TrimSpace(c.EventType) == "" {
		return nil, fieldErr(cfg, "event_type", "required")
	}
	if _, err := engine.ParsePlaceholders(c.EventType); err != nil {
		return nil, fieldErr(cfg, "event_type", "%v", err)
	}
	if !strings.Contains(c.EventType, "{{") {
		if err := engine.ValidateEventType(c.EventType); err != nil {
			return nil, fieldErr(cfg, "event_type", "%v", err)
		}
	} else if err := checkEventTypeTemplate(c.EventType); err != nil {
		return nil, fieldErr(cfg, "event_type", "%v", err)
	}
	var bad error
	walkStrings(c.Data, "data", func(path, s string) {
		if _, err := engine.ParsePlaceholders(s); err != nil && bad == nil {
			bad = fieldErr(cfg, path, "%v", err)
		}
	})
	if bad != nil {
		return nil, bad
	}
	return &emitStep{def: def, typ: c.EventType, data: c.Data}, nil
}

// checkEventTypeTemplate checks the literal parts of a type with
// placeholders: no empty segments around them.
func checkEventTypeTemplate(t string) error {
	phs, err := engine.ParsePlaceholders(t)
	if err != nil {
		return err
	}
	var b strings.Builder
	last := 0
	for _, ph := range phs {
		b.WriteString(t[last:ph.Start])
		b.WriteString("x")
		last = ph.End
	}
	b.WriteString(t[last:])
	return engine.ValidateEventType(b.String())
}

// walkStrings calls fn for every string inside v, with its field path.
func walkStrings(v any, path string, fn func(path, s string)) {
	switch x := v.(type) {
	case string:
		fn(path, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkStrings(x[k], path+"."+k, fn)
		}
	case []any:
		for i, e := range x {
			walkStrings(e, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	}
}

// Templates returns the strings of the step that may hold placeholders.
func (s *emitStep) Templates() []string {
	out := []string{s.typ}
	walkStrings(s.data, "data", func(_, str string) { out = append(out, str) })
	return out
}

// expandData expands every string inside v. With typed, a string that is
// exactly one placeholder takes the value with its type (a number, an
// object, ...); other strings, and every string without typed, are
// expanded as text.
func expandData(v any, path string, scope *engine.Scope, typed bool) (any, error) {
	switch x := v.(type) {
	case string:
		phs, err := engine.ParsePlaceholders(x)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if typed && len(phs) == 1 && phs[0].Start == 0 && phs[0].End == len(x) {
			val, err := scope.Lookup(phs[0].Path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return val, nil
		}
		s, err := engine.Expand(x, scope, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return s, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			v, err := expandData(e, path+"."+k, scope, typed)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			v, err := expandData(e, fmt.Sprintf("%s[%d]", path, i), scope, typed)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return v, nil
}

// Run publishes the event. An invalid expanded type, an unresolved
// placeholder and a refusal by the engine are errors; no hook listening
// is a result (count 0).
func (s *emitStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.def, map[string]any{"event_type": "", "runs": []any{}, "refused": []any{}, "data": map[string]any{}})
	res.Count = new(0)
	scope := scopeOf(env)
	typ, err := engine.Expand(s.typ, scope, nil)
	if err != nil {
		return fail(res, fmt.Errorf("event_type: %w", err))
	}
	if err := engine.ValidateEventType(typ); err != nil {
		return fail(res, fmt.Errorf("event_type: %w", err))
	}
	res.Fields["event_type"] = typ
	data := map[string]any{}
	if s.data != nil {
		v, err := expandData(s.data, "data", scope, true)
		if err != nil {
			return fail(res, err)
		}
		data = v.(map[string]any)
	}
	if _, err := publish(ctx, env, res, typ, data); err != nil {
		return res, err
	}
	return done(res)
}

// publish emits typ with data as the step's run and fills res's emit
// fields (event_type, data, runs, refused, count, output). The output
// says what became of each hook the event matched, in the words of
// `hookd emit` (engine.Emitted.Lines).
func publish(ctx context.Context, env *engine.StepEnv, res *engine.StepResult, typ string, data map[string]any) (*engine.StepResult, error) {
	res.Fields["event_type"] = typ
	res.Fields["data"] = data
	if env.Emit == nil {
		return fail(res, errors.New("publishing events is not available to this step"))
	}
	em, err := env.Emit(ctx, typ, data)
	if err != nil {
		return fail(res, fmt.Errorf("emit %s: %w", typ, err))
	}
	ids := make([]any, 0, len(em.Runs))
	for _, r := range em.Runs {
		ids = append(ids, r.ID)
	}
	refused := make([]any, 0, len(em.Refused))
	for _, r := range em.Refused {
		refused = append(refused, map[string]any{"hook": r.Run.Hook, "run_id": r.Run.ID, "gate": r.Gate.Gate, "reason": r.Gate.Error()})
	}
	res.Fields["runs"], res.Fields["refused"] = ids, refused
	res.Count = new(len(ids))
	if em.Elsewhere {
		res.Output = fmt.Sprintf("emitted %s: %s", typ, engine.EmittedElsewhere)
		return res, nil
	}
	res.Output = fmt.Sprintf("emitted %s: %s", typ, em.Count(typ))
	if lines := em.Lines(); len(lines) > 0 {
		res.Output += "\n" + strings.Join(lines, "\n")
	}
	return res, nil
}
