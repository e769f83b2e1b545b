package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookd/hookd/engine"
)

// Options configure an Exporter. The OTEL_EXPORTER_OTLP_* variables the
// SDK reads (endpoint, headers, timeout, TLS) and OTEL_TRACES_SAMPLER
// apply too; Endpoint and Headers, when set, win over them.
type Options struct {
	// Endpoint is the collector's OTLP/HTTP address, like
	// http://127.0.0.1:4318 (traces go to its /v1/traces).
	Endpoint string
	Headers  map[string]string
	// Content adds the prompt, the answer and each model call's text to
	// the spans (as the record holds them: redacted).
	Content bool
	// Service is service.name ("hookd" by default; OTEL_SERVICE_NAME
	// wins); Node, in cluster mode, the node's name.
	Service string
	Node    string
	// Queue bounds the runs waiting to become spans (DefaultQueue when
	// 0); Dropped is called for each run a full queue drops.
	Queue   int
	Dropped func()
	Log     *slog.Logger
}

// DefaultQueue is how many finished runs wait for the exporter at most.
const DefaultQueue = 256

// Exporter turns finished runs into traces. Create it with New, subscribe
// Observe to the engine, and Shutdown it to flush what it holds.
type Exporter struct {
	opts     Options
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	done     chan struct{}

	mu     sync.RWMutex // guards queue's close against Observe's sends
	queue  chan *engine.Run
	closed bool
}

// New starts an exporter to the collector opts name.
func New(ctx context.Context, opts Options) (*Exporter, error) {
	if err := checkEnv(); err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	var hopts []otlptracehttp.Option
	if opts.Endpoint != "" {
		hopts = append(hopts, otlptracehttp.WithEndpointURL(opts.Endpoint+"/v1/traces"))
	}
	if len(opts.Headers) > 0 {
		hopts = append(hopts, otlptracehttp.WithHeaders(opts.Headers))
	}
	exp, err := otlptracehttp.New(ctx, hopts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	service := opts.Service
	if service == "" {
		service = "hookd"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", service)}
	if opts.Node != "" {
		attrs = append(attrs, attribute.String("service.instance.id", opts.Node), attribute.String("hookd.node", opts.Node))
	}
	// The environment's resource attributes (OTEL_SERVICE_NAME,
	// OTEL_RESOURCE_ATTRIBUTES) win over these.
	res, err := resource.Merge(resource.NewSchemaless(attrs...), resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(runIDs{}),
	)
	x := &Exporter{opts: opts, provider: provider, tracer: provider.Tracer("github.com/hookd/hookd"),
		queue: make(chan *engine.Run, opts.Queue), done: make(chan struct{})}
	go x.work()
	return x, nil
}

// Observe takes a finished run (or a trigger a gate refused) from the
// engine's events; it never blocks. After Shutdown it drops what it gets.
func (x *Exporter) Observe(ev *engine.Event) {
	if ev.Source != "engine" || ev.Outcome == nil || ev.Outcome.Run == nil || ev.Outcome.Run.Status == engine.StatusRunning {
		return
	}
	run := *ev.Outcome.Run
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return
	}
	select {
	case x.queue <- &run:
	default:
		if x.opts.Dropped != nil {
			x.opts.Dropped()
		}
		x.opts.Log.Warn("trace dropped: the exporter's queue is full", "hook", run.Hook, "run", run.ID)
	}
}

func (x *Exporter) work() {
	defer close(x.done)
	for run := range x.queue {
		x.export(run)
	}
}

// Shutdown sends what the exporter holds and stops it.
func (x *Exporter) Shutdown(ctx context.Context) error {
	x.mu.Lock()
	if !x.closed {
		x.closed = true
		close(x.queue)
	}
	x.mu.Unlock()
	select {
	case <-x.done:
	case <-ctx.Done():
		return errors.Join(ctx.Err(), x.provider.Shutdown(ctx))
	}
	return x.provider.Shutdown(ctx)
}
