package engine

import (
	"slices"

	"github.com/hookd/hookd/redact"
)

// redactor builds the Redactor of h's runs: its secrets, its model key
// and notify URL variables, and hookd's own credentials (variables and
// CredentialValues).
func (e *Engine) redactor(h *Hook) *redact.Redactor {
	names := append(append([]string(nil), h.Secrets...), e.cfg.Credentials...)
	if h.LLM.APIKeyEnv != "" {
		names = append(names, h.LLM.APIKeyEnv)
	}
	for _, t := range h.Notify {
		if t.URLEnv != "" {
			names = append(names, t.URLEnv)
		}
	}
	environ := e.cfg.Environ
	if len(e.cfg.CredentialValues) > 0 {
		environ = slices.Clip(environ) // appending must not write into the shared slice
		for k, v := range e.cfg.CredentialValues {
			names, environ = append(names, k), append(environ, k+"="+v)
		}
	}
	return redact.New(names, environ)
}

// redactStep redacts a step's result in place with r (nil redacts
// nothing).
func redactStep(r *redact.Redactor, s *StepResult) {
	if r == nil || s == nil {
		return
	}
	s.Output = r.String(s.Output)
	s.Error = r.String(s.Error)
	s.Fields = r.Map(s.Fields)
}

// redactRun redacts a run record in place with r before it is stored
// (nil redacts nothing).
func redactRun(r *redact.Redactor, run *Run) {
	if r == nil {
		return
	}
	for _, s := range run.Steps {
		redactStep(r, s)
	}
	run.Prompt = r.String(run.Prompt)
	run.Response = r.String(run.Response)
	run.Error = r.String(run.Error)
	run.Reason = r.String(run.Reason)
	if len(run.ToolCalls) > 0 {
		run.ToolCalls = []byte(r.String(string(run.ToolCalls)))
	}
	for i := range run.Tools {
		u := &run.Tools[i]
		u.Arguments, u.AmendedArguments = r.String(u.Arguments), r.String(u.AmendedArguments)
		u.Result, u.Error = r.String(u.Result), r.String(u.Error)
	}
	for i, n := range run.Notes {
		run.Notes[i] = r.String(n)
	}
	if len(run.Event) > 0 {
		run.Event = []byte(r.String(string(run.Event)))
	}
}
