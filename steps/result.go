package steps

import (
	"github.com/hookd/hookd/engine"
)

// newResult starts a step result with its fields' zero values, so that a
// failed step still has every documented field. The engine times the
// step, on its clock.
func newResult(def *engine.StepDef, fields map[string]any) *engine.StepResult {
	return &engine.StepResult{
		Index:  def.Index,
		Name:   def.Name,
		Type:   def.Type,
		Fields: fields,
	}
}

// fail records err in res.
func fail(res *engine.StepResult, err error) (*engine.StepResult, error) {
	res.Error = err.Error()
	return res, err
}

// done finishes a successful result.
func done(res *engine.StepResult) (*engine.StepResult, error) {
	return res, nil
}

// scopeOf returns env's placeholder scope, never nil.
func scopeOf(env *engine.StepEnv) *engine.Scope {
	if env.Scope == nil {
		return &engine.Scope{}
	}
	return env.Scope
}
