package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/metrics"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
)

// scrape reads /metrics and parses the Prometheus text format.
func (c *apiClient) scrape() map[string]*dto.MetricFamily {
	c.t.Helper()
	code, b, hdr := c.callH("GET", "/metrics", nil)
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		c.t.Fatalf("GET /metrics: %d %s", code, hdr.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		c.t.Fatalf("parse /metrics: %v\n%s", err, b)
	}
	return fams
}

// metricValue returns the value (a histogram's count) of the series of
// name whose labels include the pairs given, or -1 when there is none.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if metrics.Label(m, labels[i]) != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

var metricHooks = map[string]string{
	"tick.yaml": `trigger:
  every: 1s
steps:
  - type: shell
    command: "true"
skip_llm: true
`,
	"fails.yaml": `steps:
  - type: shell
    command: sleep 5
    timeout: 10ms
    required: true
skip_llm: true
`,
	"cool.yaml": apiHooks["cool.yaml"],
	"short.yaml": `steps:
  - type: shell
    command: "true"
    skip_llm_if_exit_zero: true
prompt: never asked
`,
}

// TestMetrics scrapes /metrics after runs of every kind and parses it;
// `hookd status` shows the same.
func TestMetrics(t *testing.T) {
	e := newEnv(t, "", metricHooks)
	d := e.serve()
	c := e.socketClient()

	e.must(1, "fire", "fails", "--wait")
	e.must(0, "fire", "cool", "--wait")
	e.must(exitRefused, "fire", "cool")
	e.must(0, "fire", "short", "--wait")
	var fams map[string]*dto.MetricFamily
	waitFor(t, "two scheduled runs of tick", func() bool {
		fams = c.scrape()
		return metricValue(fams, "hookd_runs_total", "hook", "tick", "status", "completed") >= 2 &&
			metricValue(fams, "hookd_fire_lateness_seconds", "hook", "tick") >= 2
	}, d.log.String)

	for _, ck := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"hookd_runs_total", []string{"hook", "fails", "status", "failed"}, 1},
		{"hookd_runs_total", []string{"hook", "cool", "status", "completed"}, 1},
		{"hookd_runs_total", []string{"hook", "cool", "status", "skipped"}, 1},
		{"hookd_skips_total", []string{"hook", "cool", "reason", "cooldown"}, 1},
		{"hookd_runs_total", []string{"hook", "short", "status", "completed"}, 1},
		{"hookd_short_circuits_total", []string{"hook", "short"}, 1},
		{"hookd_run_duration_seconds", []string{"hook", "fails"}, 1},
		{"hookd_run_duration_seconds", []string{"hook", "short"}, 1},
		{"hookd_queue_depth", nil, 0},
		{"hookd_hooks_overdue", nil, 0},
		{"hookd_engine_up", nil, 1},
		{"hookd_notifications_total", []string{"outcome", "undeliverable"}, 0},
	} {
		if got := metricValue(fams, ck.name, ck.labels...); got != ck.want {
			t.Errorf("%s%v = %v, want %v", ck.name, ck.labels, got, ck.want)
		}
	}
	if got := metricValue(fams, "hookd_runs_in_flight"); got < 0 || got > 1 {
		t.Errorf("runs_in_flight = %v", got)
	}
	if got := metricValue(fams, "hookd_events_total", "source", "engine"); got < 8 {
		t.Errorf("engine events counted: %v", got)
	}
	// No model ran: no token or tool series yet.
	if len(fams["hookd_model_tokens_total"].GetMetric())+len(fams["hookd_tool_calls_total"].GetMetric()) != 0 {
		t.Errorf("token or tool series without a model stage")
	}

	r := e.must(0, "status")
	for _, want := range []string{"hookd is running (pid", "in flight:", "since hookd started:", "fails", "cooldown 1",
		"short_circuit 1", "events: "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("hookd status lacks %q:\n%s", want, r.stdout)
		}
	}
	var rep api.StatusReport
	if err := json.Unmarshal([]byte(e.must(0, "status", "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Runs["fails"]["failed"] != 1 || rep.Skips["cool"]["cooldown"] != 1 || rep.Durations["tick"].Count < 2 ||
		rep.Lateness["tick"].Count < 2 || rep.OverdueGrace != "1m" || rep.Overdue == nil {
		t.Errorf("status --json: %+v", rep)
	}
}

// receiver is a webhook endpoint for the daemon's notifications: it
// answers 500 to the first request and records the rest.
type receiver struct {
	mu     sync.Mutex
	n      int
	bodies []map[string]any
	paths  []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.n++
	if rc.n == 1 {
		w.WriteHeader(500)
		return
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	rc.bodies = append(rc.bodies, m)
	rc.paths = append(rc.paths, r.URL.Path)
}

func (rc *receiver) got() []map[string]any {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]map[string]any(nil), rc.bodies...)
}

const notifySecret = "sup3r-s3cret-value-42"

// TestNotifyAndLogs: a failed run is reported to the webhook named by
// url_env (after a 500, on the retry), with its secrets redacted; a hook
// whose notify: is empty is not reported; the JSON log carries each run's
// hook and id and never a secret or the webhook URL.
func TestNotifyAndLogs(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	e := newEnv(t, `notify:
  - name: ops
    format: generic
    url_env: HOOK_URL
    on: [failed, completed]
`, map[string]string{
		"leaky.yaml": `secrets: [API_KEY]
steps:
  - type: shell
    command: [ls, "--"]
    workdir: "missing-{{event.token}}"
    required: true
    secrets: [API_KEY]
skip_llm: true
`,
		"quiet.yaml": `notify: []
steps:
  - type: shell
    command: sleep 5
    timeout: 10ms
    required: true
skip_llm: true
`,
	})
	e.environ = []string{"API_KEY=" + notifySecret, "HOOK_URL=" + srv.URL + "/hooks/T0K3N-PATH"}
	d := e.serve("--log-format", "json")

	e.must(1, "fire", "quiet", "--wait")
	leaky := runID(t, e.must(1, "fire", "leaky", "--wait", "--event", `{"token":"`+notifySecret+`"}`))
	waitFor(t, "the notification", func() bool { return len(rc.got()) == 1 }, d.log.String)

	m := rc.got()[0]
	if m["hook"] != "leaky" || m["run_id"] != leaky || m["outcome"] != "failed" || m["trigger"] != "manual" {
		t.Errorf("notification: %v", m)
	}
	sum, _ := m["summary"].(string)
	if !strings.Contains(sum, "[REDACTED:API_KEY]") || strings.Contains(sum, notifySecret) {
		t.Errorf("summary %q: want the secret redacted", sum)
	}
	body, _ := json.Marshal(m)
	if strings.Contains(string(body), notifySecret) {
		t.Errorf("the notification holds the secret: %s", body)
	}
	c := e.socketClient()
	waitFor(t, "the delivery to be counted", func() bool {
		return metricValue(c.scrape(), "hookd_notifications_total", "outcome", "delivered") == 1
	}, nil)

	log := d.log.String()
	if strings.Contains(log, notifySecret) || strings.Contains(log, "T0K3N-PATH") {
		t.Errorf("the log holds a secret or the webhook URL:\n%s", log)
	}
	var startedLeaky, stepFailed bool
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("log line is not JSON: %q", line)
			continue
		}
		switch rec["msg"] {
		case "run started", "run finished":
			if rec["hook"] == nil || rec["run"] == nil {
				t.Errorf("run log line without hook and run: %v", rec)
			}
			startedLeaky = startedLeaky || rec["run"] == leaky
		case "step failed":
			if rec["hook"] == "leaky" && rec["run"] == leaky && strings.Contains(rec["err"].(string), "[REDACTED:API_KEY]") {
				stepFailed = true
			}
		}
	}
	if !startedLeaky || !stepFailed {
		t.Errorf("want JSON log lines of leaky's run with its hook and id (started %v, step failed %v):\n%s", startedLeaky, stepFailed, log)
	}
	rc.mu.Lock()
	if rc.n != 2 {
		t.Errorf("the receiver got %d requests, want 2 (a 500, then the retry)", rc.n)
	}
	rc.mu.Unlock()
	if n := len(rc.got()); n != 1 {
		t.Errorf("%d notifications delivered; quiet's notify: [] should silence it", n)
	}
}
