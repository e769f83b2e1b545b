package config

import (
	"github.com/hookd/hookd/budget"
	"gopkg.in/yaml.v3"
)

var daemonBudgetKeys = []string{"per_hour", "per_day", "prices"}

// spendLimits decodes per_hour and per_day of a budget: (tokens in any
// hour, any day; 0: no cap) and checks that an hour's cap is not above
// a day's.
func (s *state) spendLimits(f *fields, perHour, perDay *int64) {
	h, hok := f.decode("per_hour", perHour)
	if hok {
		nonNegative(s, h, join(f.path, "per_hour"), *perHour)
	}
	if d, ok := f.decode("per_day", perDay); ok {
		nonNegative(s, d, join(f.path, "per_day"), *perDay)
	}
	if hok && *perHour > 0 && *perDay > 0 && *perHour > *perDay {
		s.errorf(h, join(f.path, "per_hour"), "must be <= %s (%d): an hour's cap above the day's never applies (got %d)",
			join(f.path, "per_day"), *perDay, *perHour)
	}
}

// perRunWithin checks that a hook's max_tokens_per_run fits in its hour's
// and day's caps.
func (s *state) perRunWithin(n *yaml.Node, path string, perRun, perHour, perDay int64) {
	for _, c := range []struct {
		field string
		limit int64
	}{{"budget.per_hour", perHour}, {"budget.per_day", perDay}} {
		if perRun > 0 && c.limit > 0 && perRun > c.limit {
			s.errorf(n, path, "must be <= %s (%d): one run may not spend more than the whole window's budget (got %d)",
				c.field, c.limit, perRun)
			return
		}
	}
}

// daemonBudget decodes hookd.yaml's budget: the caps on the tokens all
// hooks together use, and the prices per model.
func (s *state) daemonBudget(n *yaml.Node, path string, b *budget.Daemon) {
	f := s.fields(n, path, daemonBudgetKeys, nil)
	b.File = s.file
	s.spendLimits(f, &b.PerHour, &b.PerDay)
	pn := f.get("prices")
	if pn == nil {
		return
	}
	ppath := join(path, "prices")
	if pn.Kind != yaml.MappingNode {
		s.errorf(pn, ppath, "expected a mapping of model: {input: PRICE, output: PRICE}, got %s", describe(pn))
		return
	}
	b.Prices = map[string]budget.Price{}
	for _, p := range s.pairs(pn, ppath) {
		mpath := join(ppath, p.key)
		if p.key == "" {
			s.errorf(p.k, ppath, "a model name must not be empty")
			continue
		}
		if resolve(p.v).Kind != yaml.MappingNode {
			s.errorf(p.v, mpath, "expected a mapping {input: PRICE, output: PRICE}, got %s", describe(p.v))
			continue
		}
		mf := s.fields(p.v, mpath, []string{"input", "output"}, nil)
		var price budget.Price
		for _, k := range []struct {
			key string
			dst *float64
		}{{"input", &price.Input}, {"output", &price.Output}} {
			if !mf.has(k.key) {
				s.add(mf.keyLine(k.key), mpath, "needs "+k.key+": the price of 1,000,000 "+map[string]string{"input": "prompt", "output": "completion"}[k.key]+" tokens")
				continue
			}
			if v, ok := mf.decode(k.key, k.dst); ok && *k.dst < 0 {
				s.errorf(v, join(mpath, k.key), "must be >= 0 (got %v)", *k.dst)
			}
		}
		b.Prices[p.key] = price
	}
}
