package tracing

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

// flakyStep fails its first run and passes the others.
type flakyStep struct{ runs atomic.Int32 }

func (s *flakyStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	if s.runs.Add(1) == 1 {
		return nil, errors.New("flaky")
	}
	return &engine.StepResult{Output: "ok"}, nil
}

// TestRetryInCallersTrace: a run that continued a caller's trace, failed
// and was retried (retry:) is exported in the caller's trace, and so is
// its retry, whose root span links (hookd.link=retry_of) to the failed
// run's span there: the trace and span ids its export has. Run by an
// engine, so the retry is the run the engine makes of the stored plan.
func TestRetryInCallersTrace(t *testing.T) {
	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	rc := newReceiver(t)
	x, err := New(context.Background(), Options{Endpoint: rc.url})
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hook := &engine.Hook{Name: "flaky", Enabled: true, Overlap: engine.OverlapSkip, SkipLLM: true,
		Source: engine.Source{File: "flaky.yaml"}, Steps: []*engine.StepDef{{Type: "test", Step: &flakyStep{}}},
		Retry: engine.RetryPolicy{Attempts: 2, Backoff: time.Millisecond, MaxBackoff: time.Millisecond, On: []engine.Status{engine.StatusFailed}}}
	eng, err := engine.New(engine.Config{Store: db, Tick: 10 * time.Millisecond, CacheDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, []*engine.Hook{hook})
	if err != nil {
		t.Fatal(err)
	}
	retried := make(chan *engine.Run, 1)
	eng.Subscribe(x.Observe)
	eng.Subscribe(func(ev *engine.Event) {
		if ev.Source == "engine" && ev.Outcome != nil && ev.Outcome.Run != nil && ev.Outcome.Run.Attempt == 2 && ev.Outcome.Run.Status.Final() {
			select {
			case retried <- ev.Outcome.Run:
			default:
			}
		}
	})
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	first, err := eng.Fire(context.Background(), "flaky", engine.FireOptions{TraceParent: caller})
	if err != nil {
		eng.Stop()
		t.Fatal(err)
	}
	select {
	case <-retried:
	case <-time.After(time.Minute):
		t.Error("the failed run was not retried within a minute")
	}
	eng.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := x.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		return
	}

	var r1, r2 *tracepb.Span
	for _, sp := range rc.got() {
		if sp.Name != "run flaky" {
			continue // a step's span
		}
		if attr(sp.Attributes, "hookd.run.id") == first.ID {
			r1 = sp
		} else {
			r2 = sp
		}
	}
	if r1 == nil || r2 == nil {
		t.Fatalf("spans %v; want the failed run's and its retry's", rc.got())
	}
	if len(r2.Links) != 1 || attr(r2.Links[0].Attributes, "hookd.link") != "retry_of" {
		t.Fatalf("the retry's links = %v; want one, retry_of", r2.Links)
	}
	if l := r2.Links[0]; string(l.TraceId) != string(r1.TraceId) || string(l.SpanId) != string(r1.SpanId) {
		t.Errorf("the retry links to %x/%x; want the failed run's span %x/%x", l.TraceId, l.SpanId, r1.TraceId, r1.SpanId)
	}
	for _, sp := range []*tracepb.Span{r1, r2} {
		if got, parent := hex.EncodeToString(sp.TraceId), hex.EncodeToString(sp.ParentSpanId); got+"-"+parent != caller[3:52] {
			t.Errorf("run %s is in trace %s under span %q; want the caller's %s", attr(sp.Attributes, "hookd.run.id"), got, parent, caller[3:52])
		}
	}
}
