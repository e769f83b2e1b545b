package steps

import (
	"time"

	"github.com/hookd/hookd/engine"
)

// newResult starts a step result with its fields' zero values, so that a
// failed step still has every documented field.
func newResult(def *engine.StepDef, fields map[string]any) *engine.StepResult {
	return &engine.StepResult{
		Index:   def.Index,
		Name:    def.Name,
		Type:    def.Type,
		Started: time.Now(),
		Fields:  fields,
	}
}

// fail records err in res.
func fail(res *engine.StepResult, err error) (*engine.StepResult, error) {
	res.Error = err.Error()
	res.Duration = time.Since(res.Started)
	return res, err
}

// done finishes a successful result.
func done(res *engine.StepResult) (*engine.StepResult, error) {
	res.Duration = time.Since(res.Started)
	return res, nil
}

// scopeOf returns env's placeholder scope, never nil.
func scopeOf(env *engine.StepEnv) *engine.Scope {
	if env.Scope == nil {
		return &engine.Scope{}
	}
	return env.Scope
}
