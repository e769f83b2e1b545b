package tracing

import (
	"context"
	"crypto/rand"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
)

// export sends run as one trace.
func (x *Exporter) export(run *engine.Run) {
	tid, sid := runIDsOf(run.ID)
	ctx := context.Background()
	if parent, ok := remoteParent(run.TraceParent); ok {
		// The caller's trace: the run's span is a child of the caller's.
		tid = parent.TraceID()
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	ctx = context.WithValue(ctx, rootKey{}, rootIDs{tid, sid})
	start, end := run.StartedAt, run.FinishedAt
	if start.IsZero() {
		start = run.QueuedAt
	}
	if end.IsZero() || end.Before(start) {
		end = start
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(start), trace.WithAttributes(x.runAttrs(run)...)}
	if run.RetryOf != "" {
		ptid, psid := runIDsOf(run.RetryOf)
		if run.TraceParent != "" {
			ptid = tid // a retry carries its first run's caller trace
		}
		opts = append(opts, trace.WithLinks(trace.Link{
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: ptid, SpanID: psid, TraceFlags: trace.FlagsSampled, Remote: true}),
			Attributes:  []attribute.KeyValue{attribute.String("hookd.link", "retry_of"), attribute.String("hookd.run.id", run.RetryOf)},
		}))
	}
	// A run another run started (fire_hook, an event it published, a
	// hook.run.* event) links to that run's span.
	if sc, ok := remoteParent(run.TraceLinks.StartedBy); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc,
			Attributes: []attribute.KeyValue{attribute.String("hookd.link", "started_by")}}))
	}
	// A run triggers were coalesced into (overlap: queue) links to each
	// one's trace.
	for _, tp := range run.TraceLinks.Parents {
		if sc, ok := remoteParent(tp); ok {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc,
				Attributes: []attribute.KeyValue{attribute.String("hookd.link", "coalesced")}}))
		}
	}
	ctx, root := x.tracer.Start(ctx, "run "+run.Hook, opts...)
	ctx = context.WithValue(ctx, rootKey{}, rootIDs{}) // the spans under it get ids of their own
	if run.Gate != "" {
		root.AddEvent("trigger refused", trace.WithTimestamp(start), trace.WithAttributes(
			attribute.String("hookd.gate", run.Gate), attribute.String("hookd.reason", run.Reason)))
	}
	for _, st := range run.Steps {
		x.stepSpan(ctx, st)
	}
	if tr, err := agent.DecodeTranscript(run); err == nil && tr != nil {
		x.modelSpans(ctx, tr)
	}
	switch run.Status {
	case engine.StatusFailed, engine.StatusInterrupted:
		root.SetStatus(codes.Error, run.Why())
	case engine.StatusCompleted:
		if run.CheckFailed != "" {
			root.SetStatus(codes.Error, "check failed: "+run.CheckFailed)
		} else {
			root.SetStatus(codes.Ok, "")
		}
	}
	root.End(trace.WithTimestamp(end))
}

// runAttrs are a run's root span's attributes.
func (x *Exporter) runAttrs(run *engine.Run) []attribute.KeyValue {
	a := []attribute.KeyValue{
		attribute.String("hookd.hook", run.Hook),
		attribute.String("hookd.run.id", run.ID),
		attribute.String("hookd.trigger", run.Trigger),
		attribute.String("hookd.status", string(run.Status)),
	}
	add := func(k, v string) {
		if v != "" {
			a = append(a, attribute.String(k, v))
		}
	}
	add("hookd.reason", run.Reason)
	add("hookd.error", run.ExtraError())
	add("hookd.gate", run.Gate)
	add("hookd.cause", string(run.Cause))
	add("hookd.event.type", run.EventType)
	add("hookd.check_failed", run.CheckFailed)
	add("hookd.project", run.Project)
	if !run.Slot.IsZero() {
		a = append(a, attribute.String("hookd.slot", run.Slot.UTC().Format(time.RFC3339)))
	}
	if run.Attempt > 0 {
		a = append(a, attribute.Int("hookd.attempt", run.Attempt), attribute.Int("hookd.attempts", run.Attempts))
	}
	if run.TraceLinks.Dropped > 0 { // coalesced triggers' traces past engine.MaxTraceLinks
		a = append(a, attribute.Int("hookd.links.dropped", run.TraceLinks.Dropped))
	}
	if run.Tokens.Known && run.Tokens.Prompt+run.Tokens.Completion > 0 {
		a = append(a, attribute.Int64("gen_ai.usage.input_tokens", run.Tokens.Prompt),
			attribute.Int64("gen_ai.usage.output_tokens", run.Tokens.Completion))
	}
	if x.opts.Content {
		add("hookd.prompt", run.Prompt)
		add("hookd.answer", run.Response)
	}
	return a
}

// stepSpan is one step's span.
func (x *Exporter) stepSpan(ctx context.Context, st *engine.StepResult) {
	def := engine.StepDef{Index: st.Index, Name: st.Name}
	a := []attribute.KeyValue{
		attribute.String("hookd.step.type", st.Type),
		attribute.Int("hookd.step.index", st.Index),
		attribute.Int("hookd.step.output_bytes", len(st.Output)),
	}
	if st.Name != "" {
		a = append(a, attribute.String("hookd.step.name", st.Name))
	}
	if st.ExitCode != nil {
		a = append(a, attribute.Int("process.exit.code", *st.ExitCode))
	}
	if st.StatusCode != 0 {
		a = append(a, attribute.Int("http.response.status_code", st.StatusCode))
	}
	if st.TimedOut {
		a = append(a, attribute.Bool("hookd.step.timed_out", true))
	}
	if st.Skipped {
		a = append(a, attribute.Bool("hookd.step.skipped", true))
	}
	_, span := x.tracer.Start(ctx, "step "+def.Label(), trace.WithTimestamp(st.Started), trace.WithAttributes(a...))
	if st.Error != "" {
		span.SetStatus(codes.Error, st.Error)
	}
	span.End(trace.WithTimestamp(st.Started.Add(st.Duration)))
}

// modelSpans are the model stage's spans: each model call, with the
// GenAI semantic conventions' attributes, and each tool call after it.
func (x *Exporter) modelSpans(ctx context.Context, tr *agent.Transcript) {
	for _, rd := range tr.Rounds {
		c := &rd.Call
		if c.Started.IsZero() {
			continue // answered by a handler, or never sent
		}
		// The call began with its first attempt: the failed ones and the
		// waits after them come before the one that was answered.
		begin := c.Started
		for _, at := range c.Attempts {
			begin = begin.Add(-at.Latency - at.Wait)
		}
		a := []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.provider.name", "openai"),
			attribute.String("gen_ai.request.model", tr.Model),
			attribute.String("server.address", tr.BaseURL),
		}
		if c.Model != "" {
			a = append(a, attribute.String("gen_ai.response.model", c.Model))
		}
		if c.Usage != nil {
			a = append(a, attribute.Int64("gen_ai.usage.input_tokens", c.Usage.Prompt),
				attribute.Int64("gen_ai.usage.output_tokens", c.Usage.Completion))
		}
		if c.FinishReason != "" {
			a = append(a, attribute.StringSlice("gen_ai.response.finish_reasons", []string{c.FinishReason}))
		}
		if len(c.Attempts) > 0 {
			a = append(a, attribute.Int("hookd.llm.attempts", len(c.Attempts)+1))
		}
		if x.opts.Content && c.Content != "" {
			a = append(a, attribute.String("hookd.llm.content", c.Content))
		}
		_, span := x.tracer.Start(ctx, "chat "+tr.Model, trace.WithTimestamp(begin), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(a...))
		at := begin
		for _, att := range c.Attempts {
			at = at.Add(att.Latency)
			span.AddEvent("attempt failed", trace.WithTimestamp(at), trace.WithAttributes(
				attribute.Int("http.response.status_code", att.Status), attribute.String("error.message", att.Error)))
			at = at.Add(att.Wait)
		}
		if c.Error != "" {
			span.SetStatus(codes.Error, c.Error)
			span.SetAttributes(attribute.String("error.type", "model_error"))
		}
		span.End(trace.WithTimestamp(c.Started.Add(c.Latency)))
		for _, tc := range rd.ToolCalls {
			x.toolSpan(ctx, tc)
		}
	}
}

// toolSpan is one tool call's span.
func (x *Exporter) toolSpan(ctx context.Context, tc *engine.ToolUse) {
	a := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", tc.Label()),
		attribute.String("gen_ai.tool.call.id", tc.ID),
		attribute.String("hookd.tool.outcome", string(tc.Outcome)),
		attribute.Int("hookd.tool.result_bytes", max(tc.ResultBytes, len(tc.Result))),
	}
	if tc.Server != "" {
		a = append(a, attribute.String("hookd.tool.server", tc.Server))
	}
	if tc.DeniedBy != "" {
		a = append(a, attribute.String("hookd.tool.denied_by", tc.DeniedBy))
	}
	_, span := x.tracer.Start(ctx, "execute_tool "+tc.Label(), trace.WithTimestamp(tc.Started), trace.WithAttributes(a...))
	if tc.Outcome == engine.ToolError || tc.Outcome == engine.ToolUnknown {
		span.SetStatus(codes.Error, tc.Error)
	}
	span.End(trace.WithTimestamp(tc.Started.Add(tc.Duration)))
}

// runIDsOf are the trace id and the root span id of run id: derived from
// it (engine.RunTraceIDs), so that a run that links to another (a retry
// to the first of its chain, a run to the run that started it) knows
// that one's without looking it up.
func runIDsOf(id string) (trace.TraceID, trace.SpanID) {
	t, s := engine.RunTraceIDs(id)
	return t, s
}

// rootKey carries a root span's ids to runIDs.
type rootKey struct{}

type rootIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

// runIDs is the SDK's id generator: a run's root span gets the ids
// derived from the run (rootKey), every other span a random id.
type runIDs struct{}

func (runIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if r, ok := ctx.Value(rootKey{}).(rootIDs); ok && r.span.IsValid() {
		return r.trace, r.span
	}
	var t trace.TraceID
	_, _ = rand.Read(t[:])
	return t, randomSpan()
}

// NewSpanID is a run's root span's derived id under a caller's span, a
// random one for the spans under it.
func (runIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if r, ok := ctx.Value(rootKey{}).(rootIDs); ok && r.span.IsValid() {
		return r.span
	}
	return randomSpan()
}

// remoteParent is the caller's span a traceparent names.
func remoteParent(tp engine.TraceParent) (trace.SpanContext, bool) {
	t, p := tp.IDs()
	tid, err := trace.TraceIDFromHex(t)
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(p)
	if err != nil {
		return trace.SpanContext{}, false
	}
	var flags trace.TraceFlags
	if f, err := strconv.ParseUint(string(tp[len(tp)-2:]), 16, 8); err == nil && f&1 == 1 {
		flags = trace.FlagsSampled // the caller sampled its trace
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}), true
}

func randomSpan() trace.SpanID {
	var s trace.SpanID
	_, _ = rand.Read(s[:])
	return s
}
