package config

import (
	"slices"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/human"
	"gopkg.in/yaml.v3"
)

var retryKeys = []string{"attempts", "backoff", "max_backoff", "on", "notify"}

// retry decodes a hook's retry: {attempts, backoff, max_backoff, on, notify}.
func (s *state) retry(n *yaml.Node, path string, p *engine.RetryPolicy) {
	f := s.fields(n, path, retryKeys, nil)
	*p = engine.RetryPolicy{
		Backoff: engine.DefaultRetryBackoff, MaxBackoff: engine.DefaultRetryMaxBackoff,
		On: []engine.Status{engine.StatusFailed, engine.StatusInterrupted}, Notify: engine.RetryNotifyFinal,
	}
	if a, ok := f.decode("attempts", &p.Attempts); ok {
		if p.Attempts < 1 || p.Attempts > 100 {
			s.errorf(a, join(path, "attempts"), "must be from 1 to 100, the first run included (got %d)", p.Attempts)
		}
	} else if f.get("attempts") == nil {
		s.add(n.Line, join(path, "attempts"), "required: how many runs in all, the first included (e.g. attempts: 3)")
	}
	if b, ok := f.decode("backoff", &p.Backoff); ok && p.Backoff < engine.MinRetryBackoff {
		s.errorf(b, join(path, "backoff"), "must be at least %s: retries a moment apart fail alike and hammer what failed (got %s)",
			human.Exact(engine.MinRetryBackoff), written(b, p.Backoff))
	}
	if m, ok := f.decode("max_backoff", &p.MaxBackoff); ok {
		if p.MaxBackoff < engine.MinRetryBackoff {
			s.errorf(m, join(path, "max_backoff"), "must be at least %s (got %s)", human.Exact(engine.MinRetryBackoff), written(m, p.MaxBackoff))
		} else if p.Backoff > p.MaxBackoff {
			s.errorf(m, join(path, "max_backoff"), "must be >= backoff (%s; got %s)", human.Exact(p.Backoff), written(m, p.MaxBackoff))
		}
	}
	if on := f.get("on"); on != nil {
		var list []string
		if s.decodeAt(on, join(path, "on"), &list) {
			p.On = p.On[:0]
			names := make([]string, len(engine.RetryStatuses))
			for i, st := range engine.RetryStatuses {
				names[i] = string(st)
			}
			for j, o := range list {
				if !slices.Contains(names, o) {
					s.errorf(on.Content[j], index(join(path, "on"), j), "must be %s (got %q)", orList(names), o)
					continue
				}
				p.On = append(p.On, engine.Status(o))
			}
			if len(list) == 0 {
				s.errorf(on, join(path, "on"), "must name failed and/or interrupted (leave it out for both)")
			}
		}
	}
	if v, ok := f.decode("notify", &p.Notify); ok && p.Notify != engine.RetryNotifyFinal && p.Notify != engine.RetryNotifyEach {
		s.errorf(v, join(path, "notify"), "must be %s (notifications report the last attempt) or %s (every attempt) (got %q)",
			engine.RetryNotifyFinal, engine.RetryNotifyEach, p.Notify)
	}
}
