package config

import (
	"context"
	"errors"
	"time"
	_ "time/tzdata" // the golden files name time zones

	"github.com/hookd/hookd/engine"
)

// Step kinds for the tests, under names no real kind takes.

type echoConfig struct {
	Command any               `yaml:"command"` // a string or a list
	Text    string            `yaml:"text"`
	Count   int               `yaml:"count"`
	Wait    time.Duration     `yaml:"wait"`
	Headers map[string]string `yaml:"headers"`
	Args    []string          `yaml:"args"`
	Nested  *struct {
		Deep string `yaml:"deep"`
	} `yaml:"nested"`
}

type echoStep struct{ cfg echoConfig }

func (e *echoStep) Run(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
	return &engine.StepResult{Output: e.cfg.Text}, nil
}

func init() {
	engine.RegisterStep("test_echo", engine.StepKindFunc(func(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
		s := &echoStep{}
		if err := cfg.Decode(&s.cfg); err != nil {
			return nil, err
		}
		if s.cfg.Count < 0 {
			return nil, cfg.(*Decoder).Errorf("count", "must be >= 0 (got %d)", s.cfg.Count)
		}
		return s, nil
	}))
	// test_fail refuses every step with a plain error.
	engine.RegisterStep("test_fail", engine.StepKindFunc(func(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
		var v struct{}
		if err := cfg.Decode(&v); err != nil {
			return nil, err
		}
		return nil, errors.New("test_fail: refused")
	}))
	// test_cmd declares the fields of its results, and starts processes
	// whose writes: and network: its steps declare, like shell.
	engine.RegisterStep("test_cmd", engine.DeclaredKind{Fields: []string{"stdout", "exit_code", "used_pct"}, Starts: engine.ProcessesDeclared,
		Build: func(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
			s := &echoStep{}
			return s, cfg.Decode(&s.cfg)
		}})
	// test_git starts processes under its hook's policy, like git_diff.
	engine.RegisterStep("test_git", engine.DeclaredKind{Starts: engine.ProcessesFixed,
		Build: func(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
			s := &echoStep{}
			return s, cfg.Decode(&s.cfg)
		}})
	// test_lazy never decodes its fields.
	engine.RegisterStep("test_lazy", engine.StepKindFunc(func(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
		return &echoStep{}, nil
	}))
}
