package tracing

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/hookd/hookd/engine"
)

// receiver is an OTLP/HTTP traces endpoint on a loopback port: it decodes
// the protobuf requests it gets and keeps their spans.
type receiver struct {
	url       string
	mu        sync.Mutex
	spans     []*tracepb.Span
	resources [][]*commonpb.KeyValue // each export's resource's attributes
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("export to %s as %q; want protobuf to /v1/traces", r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "want application/x-protobuf at /v1/traces", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil {
			t.Errorf("decode an export: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		for _, rs := range req.ResourceSpans {
			rc.resources = append(rc.resources, rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL
	return rc
}

func (rc *receiver) got() []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...)
}

// export sends runs through an Exporter to rc, and flushes it.
func exportRuns(t *testing.T, rc *receiver, runs ...*engine.Run) {
	t.Helper()
	exportWith(t, Options{Endpoint: rc.url}, runs...)
}

// exportWith sends runs through an Exporter made with opts, and flushes
// it.
func exportWith(t *testing.T, opts Options, runs ...*engine.Run) {
	t.Helper()
	x, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		x.Observe(engine.RunEvent(r))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := x.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func finishedRun(id string) *engine.Run {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &engine.Run{ID: id, Hook: "h", Trigger: "event", Status: engine.StatusCompleted,
		QueuedAt: t0, StartedAt: t0, FinishedAt: t0.Add(time.Second)}
}

// attr is the value of attribute key among attrs, as text ("" if none).
func attr(attrs []*commonpb.KeyValue, key string) string {
	for _, kv := range attrs {
		if kv.Key != key {
			continue
		}
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return strconv.FormatInt(v.IntValue, 10)
		}
	}
	return ""
}

// TestCoalescedRunLinksEveryTrace: a run that triggers were coalesced
// into (overlap: queue) continues its first trigger's trace, and its root
// span links to the trace of each trigger merged into it
// (hookd.link=coalesced), with those it did not keep counted.
func TestCoalescedRunLinksEveryTrace(t *testing.T) {
	const (
		first = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		b     = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		c     = "00-11111111111111111111111111111111-2222222222222222-00"
	)
	rc := newReceiver(t)
	run := finishedRun("coalesced")
	run.TraceParent = first
	run.TraceLinks = engine.TraceLinks{Parents: []engine.TraceParent{b, c}, Dropped: 3}
	exportRuns(t, rc, run)
	spans := rc.got()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the run's one", len(spans))
	}
	root := spans[0]
	if got := hex.EncodeToString(root.TraceId) + "-" + hex.EncodeToString(root.ParentSpanId); got != "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7" {
		t.Errorf("the run's trace and parent span = %s; want the first trigger's", got)
	}
	var links []string
	for _, l := range root.Links {
		links = append(links, "00-"+hex.EncodeToString(l.TraceId)+"-"+hex.EncodeToString(l.SpanId)+" "+attr(l.Attributes, "hookd.link"))
	}
	want := []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331 coalesced", "00-11111111111111111111111111111111-2222222222222222 coalesced"}
	if !slices.Equal(links, want) {
		t.Errorf("the run's span links = %q, want %q", links, want)
	}
	if got := attr(root.Attributes, "hookd.links.dropped"); got != "3" {
		t.Errorf("hookd.links.dropped = %q, want 3", got)
	}
}

// TestStartedByRunLinksToIt: a run another run started (fire_hook, an
// event it published, a hook.run.* event) has its own trace, whose root
// span links to the starting run's root span (hookd.link=started_by):
// the trace and span ids the exporter gave that run's span, which
// engine.Run.Span names.
func TestStartedByRunLinksToIt(t *testing.T) {
	rc := newReceiver(t)
	parent, child := finishedRun("parent"), finishedRun("child")
	child.TraceLinks.StartedBy = parent.Span()
	exportRuns(t, rc, parent, child)
	byRun := map[string]*tracepb.Span{}
	for _, sp := range rc.got() {
		byRun[attr(sp.Attributes, "hookd.run.id")] = sp
	}
	p, c := byRun["parent"], byRun["child"]
	if p == nil || c == nil {
		t.Fatalf("spans of runs %v, want parent and child", slices.Collect(maps.Keys(byRun)))
	}
	if string(c.TraceId) == string(p.TraceId) || len(c.ParentSpanId) != 0 {
		t.Errorf("the child run's span is in the parent's trace or under a span: trace %x, parent span %x", c.TraceId, c.ParentSpanId)
	}
	if len(c.Links) != 1 || string(c.Links[0].TraceId) != string(p.TraceId) || string(c.Links[0].SpanId) != string(p.SpanId) ||
		attr(c.Links[0].Attributes, "hookd.link") != "started_by" {
		t.Errorf("the child run's links = %v; want one, started_by, to the parent run's span %x/%x", c.Links, p.TraceId, p.SpanId)
	}
}

// TestResource: the spans' resource names the service ("hookd", or
// Options.Service; OTEL_SERVICE_NAME wins) and, in cluster mode, the node
// (service.instance.id and hookd.node); the collector's endpoint may come
// from OTEL_EXPORTER_OTLP_ENDPOINT alone.
func TestResource(t *testing.T) {
	for _, tc := range []struct {
		name                string
		opts                Options
		env                 string // OTEL_SERVICE_NAME
		service, node, inst string
	}{
		{"default", Options{}, "", "hookd", "", ""},
		{"cluster node", Options{Service: "hookd-prod", Node: "n1"}, "", "hookd-prod", "n1", "n1"},
		{"OTEL_SERVICE_NAME wins", Options{Service: "hookd-prod", Node: "n1"}, "from-env", "from-env", "n1", "n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OTEL_SERVICE_NAME", tc.env)
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
			rc := newReceiver(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.url) // the endpoint from the environment only
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			exportWith(t, tc.opts, finishedRun("r"))
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if len(rc.spans) != 1 || len(rc.resources) != 1 {
				t.Fatalf("%d spans in %d exports, want 1 in 1", len(rc.spans), len(rc.resources))
			}
			res := rc.resources[0]
			if got := attr(res, "service.name"); got != tc.service {
				t.Errorf("service.name = %q, want %q", got, tc.service)
			}
			if got := attr(res, "hookd.node"); got != tc.node {
				t.Errorf("hookd.node = %q, want %q", got, tc.node)
			}
			if got := attr(res, "service.instance.id"); got != tc.inst {
				t.Errorf("service.instance.id = %q, want %q", got, tc.inst)
			}
		})
	}
}

// TestContentOnlyWhenAsked: the prompt and the answer reach the run's
// span only with Options.Content (otel.content: true).
func TestContentOnlyWhenAsked(t *testing.T) {
	for _, content := range []bool{false, true} {
		t.Run(strconv.FormatBool(content), func(t *testing.T) {
			rc := newReceiver(t)
			run := finishedRun("r")
			run.Prompt, run.Response = "the prompt text", "the answer text"
			exportWith(t, Options{Endpoint: rc.url, Content: content}, run)
			spans := rc.got()
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			for _, kv := range spans[0].Attributes {
				if s := kv.Value.GetStringValue(); !content && (strings.Contains(s, "prompt text") || strings.Contains(s, "answer text")) {
					t.Errorf("content off: attribute %s holds %q", kv.Key, s)
				}
			}
			if got := attr(spans[0].Attributes, "hookd.prompt") + "|" + attr(spans[0].Attributes, "hookd.answer"); content && got != "the prompt text|the answer text" {
				t.Errorf("content on: hookd.prompt|hookd.answer = %q", got)
			}
		})
	}
}

// TestSamplerFromEnvironment: OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG choose which runs are sent. The default
// (parentbased_always_on) sends a run of its own and one whose caller
// sampled its trace, not one whose caller did not (traceparent flags 00).
func TestSamplerFromEnvironment(t *testing.T) {
	const (
		sampled   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		unsampled = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	)
	for _, tc := range []struct {
		sampler, arg string
		want         []string // the runs sent, of own, sampled and unsampled
	}{
		{"", "", []string{"own", "sampled"}},
		{"always_off", "", nil},
		{"always_on", "", []string{"own", "sampled", "unsampled"}},
		{"traceidratio", "0", nil},
		{"traceidratio", "1", []string{"own", "sampled", "unsampled"}},
		{"parentbased_traceidratio", "0", []string{"sampled"}},
		{"parentbased_always_off", "", []string{"sampled"}},
	} {
		t.Run(tc.sampler+"="+tc.arg, func(t *testing.T) {
			t.Setenv("OTEL_TRACES_SAMPLER", tc.sampler)
			t.Setenv("OTEL_TRACES_SAMPLER_ARG", tc.arg)
			rc := newReceiver(t)
			own, s, u := finishedRun("own"), finishedRun("sampled"), finishedRun("unsampled")
			s.TraceParent, u.TraceParent = sampled, unsampled
			exportRuns(t, rc, own, s, u)
			var sent []string
			for _, sp := range rc.got() {
				sent = append(sent, attr(sp.Attributes, "hookd.run.id"))
			}
			slices.Sort(sent)
			if !slices.Equal(sent, tc.want) {
				t.Errorf("OTEL_TRACES_SAMPLER=%s OTEL_TRACES_SAMPLER_ARG=%s: runs sent %q, want %q", tc.sampler, tc.arg, sent, tc.want)
			}
		})
	}
}

// TestOTLPOverHTTPOnly: hookd sends OTLP as protobuf over HTTP (the
// receiver refuses anything else).
func TestOTLPOverHTTPOnly(t *testing.T) {
	for _, proto := range []string{"", "http/protobuf"} {
		t.Run("protocol="+proto, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
			rc := newReceiver(t)
			exportRuns(t, rc, finishedRun("r"))
			if n := len(rc.got()); n != 1 {
				t.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: %d spans over http/protobuf, want 1", proto, n)
			}
		})
	}
}

// TestEnvironmentMistakes: the variables the SDK would misread in
// silence — it takes an unknown sampler for the default (every trace
// sent), a bad ratio for 1, and sends http/protobuf whatever protocol is
// asked for — are refused with the variable named.
func TestEnvironmentMistakes(t *testing.T) {
	for _, tc := range []struct{ name, value, sampler, want string }{
		{"OTEL_TRACES_SAMPLER", "always_of", "", `OTEL_TRACES_SAMPLER="always_of" is not a sampler`},
		{"OTEL_TRACES_SAMPLER_ARG", "half", "traceidratio", `OTEL_TRACES_SAMPLER_ARG="half" is not a ratio`},
		{"OTEL_TRACES_SAMPLER_ARG", "2", "parentbased_traceidratio", `OTEL_TRACES_SAMPLER_ARG="2" is not a ratio`},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "", `OTEL_EXPORTER_OTLP_PROTOCOL="grpc": hookd sends OTLP over http/protobuf only`},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json", "", `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http/json"`},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			for _, n := range []string{"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
				t.Setenv(n, "")
			}
			if tc.sampler != "" {
				t.Setenv("OTEL_TRACES_SAMPLER", tc.sampler)
			}
			t.Setenv(tc.name, tc.value)
			_, err := New(context.Background(), Options{Endpoint: "http://127.0.0.1:1"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New with %s=%s: %v, want an error saying %s", tc.name, tc.value, err, tc.want)
			}
		})
	}
}
