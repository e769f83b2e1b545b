package metrics

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Source is what the gauges read when scraped; *engine.Engine is one.
type Source interface {
	Summary(ctx context.Context) (engine.Summary, error)
	Overdue(ctx context.Context, grace time.Duration) ([]string, error)
}

// Notification outcomes counted by Notification.
const (
	NotifyDelivered     = "delivered"
	NotifyUndeliverable = "undeliverable"
	NotifyDropped       = "dropped"
)

// Metrics is hookd's metric registry. It is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	runs          *prometheus.CounterVec
	skips         *prometheus.CounterVec
	shortCircuits *prometheus.CounterVec
	checkFailed   *prometheus.CounterVec
	drops         *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	lateness      *prometheus.HistogramVec
	tokens        *prometheus.CounterVec
	tools         *prometheus.CounterVec
	events        *prometheus.CounterVec
	notifications *prometheus.CounterVec
	pruned        *prometheus.CounterVec
	retries       *prometheus.CounterVec
	refusals      *prometheus.CounterVec
	traceDrops    prometheus.Counter
}

// New builds the registry. The gauges ask src, waiting at most timeout
// (default 2s); a periodic hook is overdue once it is grace past due.
func New(src Source, grace, timeout time.Duration) *Metrics {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookd_runs_total", Help: "Final run records, by hook and status.",
		}, []string{"hook", "status"}),
		skips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookd_skips_total", Help: "Skipped run records (a gate refused the trigger), by hook and reason (the gate).",
		}, []string{"hook", "reason"}),
		shortCircuits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookd_short_circuits_total", Help: "Completed runs whose steps made the model unnecessary (a skip_llm_if_* condition held), by hook.",
		}, []string{"hook"}),
		checkFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookd_check_failed_total", Help: "Runs whose check step did not pass (check_failed: a skip_llm_if_exit_zero or skip_llm_if_status_ok step, or the hook's check:), by hook and status.",
		}, []string{"hook", "status"}),
		drops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookd_drops_total", Help: "Dropped run records, by hook and reason.",
		}, []string{"hook", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hookd_run_duration_seconds", Help: "Duration of runs that started, by hook.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
		}, []string{"hook"}),
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hookd_fire_lateness_seconds", Help: "How long after its jittered slot a scheduled run started, by hook.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"hook"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookd_model_tokens_total", Help: "Model tokens reported by the server, by hook and kind (prompt, completion, cached).",
		}, []string{"hook", "kind"}),
		tools: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookd_tool_calls_total", Help: "Tool calls of the model stage, by tool and outcome.",
		}, []string{"tool", "outcome"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookd_events_total", Help: "Events published on the bus, by source.",
		}, []string{"source"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookd_notifications_total", Help: "Webhook notifications, by outcome (delivered, undeliverable, dropped).",
		}, []string{"outcome"}),
	}
	m.pruned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookd_pruned_rows_total", Help: "History rows deleted by retention, by kind (runs, skipped, events).",
	}, []string{"kind"})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookd_retries_total", Help: "Retries scheduled for failed or interrupted runs (retry:), by hook.",
	}, []string{"hook"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookd_budget_refusals_total", Help: "Triggers refused because a token budget (the hook's or the daemon's) was spent, by hook.",
	}, []string{"hook"})
	m.traceDrops = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "hookd_traces_dropped_total", Help: "Runs not sent as OpenTelemetry traces because the exporter's queue was full.",
	})
	for _, k := range []string{"runs", "skipped", "events"} {
		m.pruned.WithLabelValues(k)
	}
	for _, o := range []string{NotifyDelivered, NotifyUndeliverable, NotifyDropped} {
		m.notifications.WithLabelValues(o)
	}
	m.reg.MustRegister(m.runs, m.skips, m.shortCircuits, m.checkFailed, m.drops, m.duration, m.lateness, m.tokens, m.tools, m.events,
		m.notifications, m.pruned, m.retries, m.refusals, m.traceDrops, &gauges{src: src, grace: grace, timeout: timeout},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Gather returns the current metric families, for `hookd status`.
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) { return m.reg.Gather() }

// Notification counts one webhook notification's outcome.
func (m *Metrics) Notification(outcome string) { m.notifications.WithLabelValues(outcome).Inc() }

// TraceDropped counts a run the trace exporter's full queue dropped.
func (m *Metrics) TraceDropped() { m.traceDrops.Inc() }

// Pruned counts history rows retention deleted, of kind runs, skipped or
// events.
func (m *Metrics) Pruned(kind string, n int64) { m.pruned.WithLabelValues(kind).Add(float64(n)) }

// Observe counts an engine event. It is an engine.Subscribe callback: it
// only updates counters, never blocks and never calls the engine. A run
// event is read from its typed outcome.
func (m *Metrics) Observe(ev *engine.Event) {
	m.events.WithLabelValues(sourceLabel(ev.Source)).Inc()
	if ev.Outcome == nil || ev.Source != "engine" {
		return
	}
	run := ev.Outcome.Run
	if ev.Type == engine.EventRunStarted {
		if ev.Outcome.Scheduled {
			m.lateness.WithLabelValues(run.Hook).Observe(max(ev.Outcome.Lateness, 0).Seconds())
		}
		return
	}
	m.runs.WithLabelValues(run.Hook, string(run.Status)).Inc()
	switch run.Status {
	case engine.StatusSkipped:
		m.skips.WithLabelValues(run.Hook, gateLabel(run.Gate)).Inc()
		if run.Gate == engine.GateBudget {
			m.refusals.WithLabelValues(run.Hook).Inc()
		}
	case engine.StatusDropped:
		m.drops.WithLabelValues(run.Hook, gateLabel(run.Gate)).Inc()
	}
	if run.Cause == engine.CauseShortCircuit {
		m.shortCircuits.WithLabelValues(run.Hook).Inc()
	}
	if run.CheckFailed != "" {
		m.checkFailed.WithLabelValues(run.Hook, string(run.Status)).Inc()
	}
	if run.Retry != nil {
		m.retries.WithLabelValues(run.Hook).Inc()
	}
	if !run.StartedAt.IsZero() {
		m.duration.WithLabelValues(run.Hook).Observe(run.Duration().Seconds())
	}
	if t := run.Tokens; t.Known {
		for kind, n := range map[string]int64{"prompt": t.Prompt, "completion": t.Completion, "cached": t.Cached} {
			if n > 0 {
				m.tokens.WithLabelValues(run.Hook, kind).Add(float64(n))
			}
		}
	}
	for i := range run.Tools {
		u := &run.Tools[i]
		m.tools.WithLabelValues(u.Label(), string(u.Outcome)).Inc()
	}
}

// gateLabel is the reason label of a skip or drop: the gate.
func gateLabel(gate string) string {
	if gate == "" {
		return "none"
	}
	return gate
}

// sourceLabel folds hook:NAME into hook, so labels stay few.
func sourceLabel(src string) string {
	if src == "" {
		return "unknown"
	}
	s, _, _ := strings.Cut(src, ":")
	return s
}

// gauges reads the engine's live state when scraped.
type gauges struct {
	src     Source
	grace   time.Duration
	timeout time.Duration
}

var (
	descQueue    = prometheus.NewDesc("hookd_queue_depth", "Runs waiting for a concurrency slot.", nil, nil)
	descInFlight = prometheus.NewDesc("hookd_runs_in_flight", "Runs executing.", nil, nil)
	descOverdue  = prometheus.NewDesc("hookd_hooks_overdue", "Periodic hooks past due by more than the grace period without a run.", nil, nil)
	descHookOver = prometheus.NewDesc("hookd_hook_overdue", "1 for each overdue periodic hook.", []string{"hook"}, nil)
	descRetries  = prometheus.NewDesc("hookd_retries_pending", "Retries of failed runs waiting for their time.", nil, nil)
	descUp       = prometheus.NewDesc("hookd_engine_up", "1 when the engine answered the scrape.", nil, nil)
	descBroken   = prometheus.NewDesc("hookd_hook_files_broken", "Hook files that do not load (hookd status lists them with their errors).", nil, nil)

	// The spend gauges: scope is daemon (all hooks; hook is "") or hook;
	// window is 1h or 24h (sliding).
	spendLabels    = []string{"scope", "hook", "window"}
	descSpendUsed  = prometheus.NewDesc("hookd_budget_used_tokens", "Tokens (prompt + completion, as servers reported them) used by runs that finished in the window.", spendLabels, nil)
	descSpendLimit = prometheus.NewDesc("hookd_budget_limit_tokens", "The token budget of the window (budget.per_hour, budget.per_day), where one is set.", spendLabels, nil)
	descSpendCost  = prometheus.NewDesc("hookd_budget_used_cost", "Cost of the tokens used in the window at budget.prices (hookd.yaml), where prices are set.", spendLabels, nil)
)

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- descQueue
	ch <- descInFlight
	ch <- descOverdue
	ch <- descHookOver
	ch <- descRetries
	ch <- descUp
	ch <- descBroken
	ch <- descSpendUsed
	ch <- descSpendLimit
	ch <- descSpendCost
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	sum, err := g.src.Summary(ctx)
	var overdue []string
	if err == nil {
		overdue, err = g.src.Overdue(ctx, g.grace)
	}
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(len(sum.Queued)))
	ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(len(sum.InFlight)))
	ch <- prometheus.MustNewConstMetric(descRetries, prometheus.GaugeValue, float64(len(sum.Retries)))
	ch <- prometheus.MustNewConstMetric(descOverdue, prometheus.GaugeValue, float64(len(overdue)))
	ch <- prometheus.MustNewConstMetric(descBroken, prometheus.GaugeValue, float64(len(sum.Broken)))
	for _, h := range overdue {
		ch <- prometheus.MustNewConstMetric(descHookOver, prometheus.GaugeValue, 1, h)
	}
	sp := sum.Spend
	spend(ch, sp.Priced, sp.Daemon, "daemon", "")
	for h, w := range sp.Hooks {
		spend(ch, sp.Priced, w, "hook", h)
	}
}

// spend sends the spend gauges of one budget.
func spend(ch chan<- prometheus.Metric, priced bool, w budget.SpendWindows, scope, hook string) {
	for _, win := range []struct {
		name string
		w    budget.SpendWindow
	}{{"1h", w.Hour}, {"24h", w.Day}} {
		ch <- prometheus.MustNewConstMetric(descSpendUsed, prometheus.GaugeValue, float64(win.w.Tokens), scope, hook, win.name)
		if win.w.Limit > 0 {
			ch <- prometheus.MustNewConstMetric(descSpendLimit, prometheus.GaugeValue, float64(win.w.Limit), scope, hook, win.name)
		}
		if priced {
			ch <- prometheus.MustNewConstMetric(descSpendCost, prometheus.GaugeValue, win.w.Cost, scope, hook, win.name)
		}
	}
}

// Label is the value of the label name of m, "" when m has none: for a
// reader of Gather's families.
func Label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
