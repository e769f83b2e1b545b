package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/internal/human"
	"github.com/hookd/hookd/metrics"
	dto "github.com/prometheus/client_model/go"
)

func (a *Server) status(w http.ResponseWriter, r *http.Request) {
	rep, err := a.report(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// storeAnswer bounds what /v1/status waits for the database (its size,
// the cluster's nodes): the status of a stalled store still answers.
const storeAnswer = 2 * time.Second

func (a *Server) report(ctx context.Context) (*api.StatusReport, error) {
	sum, err := a.eng.Summary(ctx)
	if err != nil {
		return nil, err
	}
	overdue, err := a.eng.Overdue(ctx, a.grace)
	if err != nil {
		return nil, err
	}
	running, err := a.eng.InFlight(ctx)
	if err != nil {
		return nil, err
	}
	rep := &api.StatusReport{
		Summary: sum, Running: running, PID: os.Getpid(), Uptime: human.Exact(clock.Since(a.clock, a.started).Round(time.Second)),
		OverdueGrace: human.Exact(a.grace), Overdue: overdue,
		Runs: api.CountsBy{}, Skips: api.CountsBy{}, Drops: api.CountsBy{}, Tokens: api.CountsBy{}, ToolCalls: api.CountsBy{},
		Durations: map[string]api.Dist{}, Lateness: map[string]api.Dist{}, Events: api.Counts{}, Notifications: api.Counts{}, ShortCircuits: api.Counts{}, CheckFailed: api.CountsBy{},
		Sandbox: api.NewSandboxReport(a.eng.SandboxStatus()),
	}
	hooks, err := a.eng.Hooks(ctx)
	if err != nil {
		return nil, err
	}
	for _, h := range hooks {
		if h.Sandbox != "" {
			if rep.Sandbox.Hooks == nil {
				rep.Sandbox.Hooks = map[string]string{}
			}
			rep.Sandbox.Hooks[h.Name] = h.Sandbox
		}
	}
	for _, l := range []*[]string{&rep.InFlight, &rep.Queued, &rep.Overdue} {
		if *l == nil {
			*l = []string{}
		}
	}
	if a.pruner != nil {
		// A stalled store must not hold the status that reports it.
		sctx, cancel := context.WithTimeout(ctx, storeAnswer)
		size, err := a.pruner.Size(sctx)
		cancel()
		w := a.pruner.Where()
		rep.Database = &api.DBReport{Path: w.Name, Kind: w.Kind, StoreSize: size, LastPrune: a.pruner.Last()}
		if err != nil {
			rep.Database.Error = "size unknown: " + err.Error()
		}
	}
	cctx, cancel := context.WithTimeout(ctx, storeAnswer)
	defer cancel()
	if rep.Cluster, err = clusterOf(cctx, a.cluster); err != nil {
		return nil, err
	}
	if a.metrics == nil {
		return rep, nil
	}
	fams, err := a.metrics.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	for _, f := range fams {
		switch f.GetName() {
		case "hookd_runs_total":
			addCounts(rep.Runs, f, "hook", "status")
		case "hookd_skips_total":
			addCounts(rep.Skips, f, "hook", "reason")
		case "hookd_short_circuits_total":
			for _, m := range f.GetMetric() {
				rep.ShortCircuits[metrics.Label(m, "hook")] += m.GetCounter().GetValue()
			}
		case "hookd_check_failed_total":
			addCounts(rep.CheckFailed, f, "hook", "status")
		case "hookd_drops_total":
			addCounts(rep.Drops, f, "hook", "reason")
		case "hookd_model_tokens_total":
			addCounts(rep.Tokens, f, "hook", "kind")
		case "hookd_tool_calls_total":
			addCounts(rep.ToolCalls, f, "tool", "outcome")
		case "hookd_events_total":
			for _, m := range f.GetMetric() {
				rep.Events[metrics.Label(m, "source")] += m.GetCounter().GetValue()
			}
		case "hookd_notifications_total":
			for _, m := range f.GetMetric() {
				rep.Notifications[metrics.Label(m, "outcome")] += m.GetCounter().GetValue()
			}
		case "hookd_run_duration_seconds":
			digest(f, rep.Durations)
		case "hookd_fire_lateness_seconds":
			digest(f, rep.Lateness)
		}
	}
	return rep, nil
}

// addCounts adds the counters of f to c by the labels outer and inner.
func addCounts(c api.CountsBy, f *dto.MetricFamily, outer, inner string) {
	for _, m := range f.GetMetric() {
		o := metrics.Label(m, outer)
		if c[o] == nil {
			c[o] = api.Counts{}
		}
		c[o][metrics.Label(m, inner)] += m.GetCounter().GetValue()
	}
}

func digest(f *dto.MetricFamily, into map[string]api.Dist) {
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		n := h.GetSampleCount()
		if n == 0 {
			continue
		}
		d := api.Dist{Count: n, Mean: h.GetSampleSum() / float64(n), P95: -1}
		want := uint64(math.Ceil(0.95 * float64(n)))
		for _, b := range h.GetBucket() {
			if b.GetCumulativeCount() >= want {
				d.P95 = b.GetUpperBound()
				break
			}
		}
		into[metrics.Label(m, "hook")] = d
	}
}
