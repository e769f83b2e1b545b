package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/api/client"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/human"
)

func cmdFire(c *cli, args []string) int {
	fs := c.flags()
	wait := fs.Bool("wait", false, "wait for the run to end; exit 0 if it completed or was skipped, 3 if it completed with check_failed, 1 if not (75, at once, when a gate refused it)")
	force := fs.Bool("force", false, "skip the cooldown (never the in-flight gate, nor enabled: false)")
	evenDisabled := fs.Bool("even-disabled", false, "run the hook although it has enabled: false (every other gate applies)")
	eventJSON := fs.String("event", "", "event payload as a JSON object, visible as {{event}}; the hook's where: must accept it (75 when not)")
	ignoreWhere := fs.Bool("ignore-where", false, "with --event: fire although the hook's where: rejects the event")
	asJSON := fs.Bool("json", false, "print the run as JSON (with --wait, the final run) instead of its id, progress and outcome")
	waitLock := waitLockFlag(fs)
	traceFlag := traceParentFlag(c, fs)
	pos, d, code, ok := c.setup(fs, args, 1, 1)
	if !ok {
		return code
	}
	name := pos[0]
	tp, ok := c.traceParent(*traceFlag)
	if !ok {
		return exitUsage
	}
	c.quiet = *asJSON
	event, ok := c.jsonObject("event", *eventJSON)
	if !ok {
		return exitUsage
	}
	if *ignoreWhere && event == nil {
		fmt.Fprintln(c.stderr, "hookd fire: --ignore-where needs --event (a fire without an event is not judged by where:)")
		return exitUsage
	}
	depth, ok := c.chainDepth()
	if !ok {
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(client.WithTraceParent(context.Background(), tp), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Through the daemon, or with no daemon here, holding the database
	// lock.
	cl, l, code, done := c.reachOrOpen(ctx, d, *waitLock)
	if done {
		return code
	}
	if cl != nil {
		var pp *progressPrinter
		if *wait {
			// Follow the stream before firing, so no step is missed.
			pp = c.progress()
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if err := followStream(sctx, cl, name, pp); err != nil {
				fmt.Fprintf(c.stderr, "hookd fire: no progress shown: %v\n", err)
			}
			if !c.quiet {
				if _, err := followOutput(sctx, cl.HTTP(), client.BaseURL, "", name, pp.output); err != nil {
					fmt.Fprintf(c.stderr, "hookd fire: no live output shown: %v\n", err)
				} else {
					pp.follow()
				}
			}
		}
		var ans api.RunAnswer
		err := cl.Do(ctx, "POST", "/v1/hooks/"+name+"/fire", api.FireRequest{Event: event, Force: *force, EvenDisabled: *evenDisabled, IgnoreWhere: *ignoreWhere, Depth: depth}, &ans)
		if code, done := c.fireRefused(err); done {
			return code
		}
		c.printFired(ans.Run)
		if !*wait {
			if c.quiet {
				return c.printJSON(ans.Run)
			}
			return exitOK
		}
		pp.setRun(ans.Run.ID)
		var final engine.Run
		if err := cl.Do(ctx, "GET", "/v1/runs/"+ans.Run.ID+"/wait", nil, &final); err != nil {
			pp.close(0)
			return c.errorf("wait for run %s: %v", ans.Run.ID, err)
		}
		pp.close(progressGrace)
		return c.printFinal(&final)
	}

	defer l.Close()
	pp := c.progress()
	unsubscribe := subscribeProgress(l.Engine, name, pp)
	defer unsubscribe()
	if !c.quiet {
		stopOutput := subscribeOutput(l.Engine, name, pp.output)
		defer stopOutput()
		pp.follow()
	}
	run, err := l.Engine.Fire(ctx, name, engine.FireOptions{Event: event, Force: *force, EvenDisabled: *evenDisabled, IgnoreWhere: *ignoreWhere,
		Depth: depth, TraceParent: tp})
	if code, done := c.fireRefused(err); done {
		pp.close(0)
		return code
	}
	c.printFired(run)
	pp.setRun(run.ID)
	final, err := l.Engine.Wait(ctx, run.ID)
	if err != nil {
		pp.close(0)
		// Interrupted: cancel the run and record it so.
		sctx, cancel := context.WithTimeout(context.Background(), 0)
		defer cancel()
		l.Engine.Shutdown(sctx)
		return c.errorf("run %s cancelled: %v", run.ID, err)
	}
	pp.close(progressGrace)
	code = c.printFinal(final)
	if !*wait {
		return exitOK
	}
	return code
}

// chainDepth is HOOKD_DEPTH, which hookd gives the commands of lifecycle
// handlers at notify:* points: the depth of the chain of runs that led
// to them. hookd fire and hookd emit run from such a command pass it on,
// so that a handler that fires a hook whose notification fails in turn
// is cut by the event_depth gate. Unset, 0; not a whole number >= 0, a
// usage error.
func (c *cli) chainDepth() (int, bool) {
	v := c.env("HOOKD_DEPTH")
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		fmt.Fprintf(c.stderr, "hookd %s: HOOKD_DEPTH is %q; want a whole number, 0 or more (set by hookd for lifecycle handlers)\n", c.name, v)
		return 0, false
	}
	return n, true
}

// fireRefused reports errors of a fire: a gate refusal exits 75.
func (c *cli) fireRefused(err error) (int, bool) {
	if err == nil {
		return 0, false
	}
	var gate *engine.GateError
	var remote *client.RemoteError
	switch {
	case errors.As(err, &gate), errors.As(err, &remote) && remote.Body.Gate != "":
		fmt.Fprintf(c.stderr, "hookd fire: %s\n", engine.RefusedText(err.Error()))
		return exitRefused, true
	case errors.Is(err, engine.ErrNotFound), errors.As(err, &remote) && remote.Status == 404:
		return c.errorf("%v (see `hookd list`, or `hookd validate` if its file has errors)", err), true
	}
	return c.errorf("%v", err), true
}

// emitCode is emit's exit code: exitRefused when gates refused every
// hook the event matched (nothing started: a retry later is safe),
// else code.
func emitCode(ans api.EmitAnswer, code int) int {
	if len(ans.Refused) > 0 && len(ans.Runs) == 0 {
		return exitRefused
	}
	return code
}

func (c *cli) printFired(run *engine.Run) {
	if c.quiet {
		return
	}
	fmt.Fprintln(c.stdout, run.ID)
	c.flush() // --wait waits after this
	if run.Status == engine.StatusQueued {
		fmt.Fprintln(c.stderr, engine.QueuedText(run.Reason))
	}
}

// progressGrace is how long fire --wait waits, once the run is over, for
// the stream to deliver the run's last events.
const progressGrace = 3 * time.Second

// progress returns a printer of a run's progress on stderr, with a live
// line when stderr is a terminal.
func (c *cli) progress() *progressPrinter {
	if c.quiet {
		return newProgressPrinter(io.Discard, func() {}, false)
	}
	return newProgressPrinter(c.stderr, c.flush, c.term)
}

// subscribeProgress feeds hook's events on eng's bus to p, off the bus's
// goroutine (a subscriber must not block).
func subscribeProgress(eng *engine.Engine, hook string, p *progressPrinter) func() {
	ch := make(chan *engine.Event, 1024)
	done := make(chan struct{})
	cancel := eng.Subscribe(func(ev *engine.Event) {
		if h, _ := ev.Data["hook"].(string); h != hook || !strings.HasPrefix(ev.Type, "hook.") {
			return
		}
		select {
		case ch <- ev:
		default: // a slow terminal loses progress lines, never the run
		}
	})
	go func() {
		defer close(done)
		for ev := range ch {
			p.event(ev.Type, ev.Time, ev.Data)
		}
	}()
	return func() {
		cancel()
		close(ch)
		<-done
	}
}

// printFinal prints a final run's outcome on stderr and the model's
// answer on stdout, and returns the exit code of --wait.
func (c *cli) printFinal(run *engine.Run) int {
	code := c.printOutcome(run)
	if c.quiet {
		if jc := c.printJSON(run); jc != exitOK {
			return jc
		}
		return code
	}
	if answer := strings.TrimRight(run.Response, "\n"); answer != "" {
		fmt.Fprintln(c.stdout, answer)
	}
	return code
}

// printOutcome prints a final run's status line and returns the exit code
// --wait uses (engine.ExitOf): 0 for completed or skipped, 3 for
// completed with check_failed, 1 for failed.
func (c *cli) printOutcome(run *engine.Run) int {
	line := fmt.Sprintf("%s %s in %s", run.Hook, run.Headline(), human.Duration(run.Duration()))
	if run.Reason != "" {
		line += ": " + run.Reason
	}
	if e := run.ExtraError(); e != "" {
		line += ": " + e
	}
	if !c.quiet {
		fmt.Fprintln(c.stderr, line)
	}
	return int(engine.ExitOf(run))
}

func cmdEmit(c *cli, args []string) int {
	fs := c.flags()
	dataJSON := fs.String("data", "", "payload as a JSON object (key=value arguments are merged into it)")
	id := fs.String("id", "", "event id; an id seen before is not dispatched again")
	wait := fs.Bool("wait", false, "wait for the runs it started; exit 1 if one did not complete or skip, else 3 if one completed with check_failed")
	asJSON := fs.Bool("json", false, "print the answer as JSON: event_id, seq and the runs (with --wait, as they ended)")
	waitLock := waitLockFlag(fs)
	traceFlag := traceParentFlag(c, fs)
	pos, d, code, ok := c.setup(fs, args, 1, -1)
	if !ok {
		return code
	}
	tp, ok := c.traceParent(*traceFlag)
	if !ok {
		return exitUsage
	}
	data, ok := c.jsonObject("data", *dataJSON)
	if !ok {
		return exitUsage
	}
	if data == nil {
		data = map[string]any{}
	}
	for _, kv := range pos[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			fmt.Fprintf(c.stderr, "hookd emit: %q is not key=value\n", kv)
			return exitUsage
		}
		data[k] = v
	}
	depth, ok := c.chainDepth()
	if !ok {
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(client.WithTraceParent(context.Background(), tp), os.Interrupt, syscall.SIGTERM)
	defer stop()
	req := api.EmitRequest{ID: *id, Type: pos[0], Data: data, Depth: depth}
	c.quiet = *asJSON

	cl, l, code, done := c.reachOrOpen(ctx, d, *waitLock)
	if done {
		return code
	}
	if cl != nil {
		var ans api.EmitAnswer
		if err := cl.Do(ctx, "POST", "/v1/events", req, &ans); err != nil {
			return c.errorf("%v", err)
		}
		c.printEmitted(ans, req.Type)
		if *wait {
			worst := exitOK
			for i, r := range ans.Runs {
				var final engine.Run
				if err := cl.Do(ctx, "GET", "/v1/runs/"+r.ID+"/wait", nil, &final); err != nil {
					return c.errorf("wait for run %s: %v", r.ID, err)
				}
				worst = worstExit(worst, c.printOutcome(&final))
				ans.Runs[i] = &final
			}
			return c.emitted(ans, worst)
		}
		return c.emitted(ans, exitOK)
	}

	defer l.Close()
	ev := &engine.Event{ID: req.ID, Type: req.Type, Data: req.Data, Source: "cli", Depth: req.Depth, TraceParent: tp}
	em, err := l.Engine.EmitReport(ctx, ev)
	if errors.Is(err, engine.ErrDuplicateEvent) {
		ans := api.EmitAnswer{EventID: ev.ID, Seq: ev.Seq, Duplicate: true, Runs: []*engine.Run{}}
		c.printEmitted(ans, req.Type)
		return c.emitted(ans, exitOK)
	}
	if err != nil {
		return c.errorf("%v", err)
	}
	ans := api.NewEmitAnswer(ev, em)
	c.printEmitted(ans, req.Type)
	worst := exitOK
	finals := make([]*engine.Run, 0, len(ans.Runs))
	for _, r := range ans.Runs {
		final, err := l.Engine.Wait(ctx, r.ID)
		if err != nil {
			return c.errorf("wait for run %s: %v", r.ID, err)
		}
		worst = worstExit(worst, c.printOutcome(final))
		finals = append(finals, final)
	}
	if !*wait {
		return c.emitted(ans, exitOK)
	}
	ans.Runs = finals
	return c.emitted(ans, worst)
}

// emitted ends emit: with --json it prints the answer; the exit code is
// code, or exitRefused when gates refused every hook (emitCode).
func (c *cli) emitted(ans api.EmitAnswer, code int) int {
	if c.quiet {
		if jc := c.printJSON(ans); jc != exitOK {
			return jc
		}
	}
	return emitCode(ans, code)
}

func (c *cli) printEmitted(ans api.EmitAnswer, typ string) {
	if c.quiet {
		return
	}
	switch {
	case ans.Duplicate:
		// Idempotent: a retry of a published event is not an error.
		fmt.Fprintf(c.stdout, "event %s: 0 run(s)\n", ans.EventID)
		fmt.Fprintf(c.stderr, "event %s was already published (seq %d); not dispatched again\n", ans.EventID, ans.Seq)
		return
	case ans.Pending:
		fmt.Fprintf(c.stdout, "event %s: 0 run(s)\n", ans.EventID)
		fmt.Fprintf(c.stderr, "hookd is stopping: event %s is stored and is dispatched when it starts again\n", ans.EventID)
		return
	case ans.Queued:
		fmt.Fprintf(c.stdout, "event %s: queued\n", ans.EventID)
		fmt.Fprintf(c.stderr, "event %s is stored; the cluster's scheduler (another node) dispatches it: see `hookd runs` for what it started\n", ans.EventID)
		return
	}
	said := engine.EmitCount(len(ans.Runs), len(ans.Refused))
	if ans.Fate != nil {
		said = ans.Fate.Text(typ)
	}
	fmt.Fprintf(c.stdout, "event %s: %s\n", ans.EventID, said)
	for _, r := range ans.Runs {
		fmt.Fprintln(c.stdout, "  "+engine.RunLine(r))
	}
	for _, r := range ans.Refused {
		fmt.Fprintln(c.stdout, "  "+engine.RefusedLine(r.RunID, r.Hook, r.Error))
	}
}

// worstExit is the worse of two exit codes of runs (engine.WorstExit).
func worstExit(a, b int) int { return int(engine.WorstExit(engine.ExitCode(a), engine.ExitCode(b))) }

// traceParentFlag is --traceparent of fire and emit: the caller's trace
// the runs continue (default $TRACEPARENT).
func traceParentFlag(c *cli, fs *flag.FlagSet) *string {
	return fs.String("traceparent", c.env("TRACEPARENT"), "W3C traceparent (00-TRACEID-SPANID-FLAGS) of the caller's trace, which the runs continue (default $TRACEPARENT)")
}

// traceParent checks --traceparent's value.
func (c *cli) traceParent(v string) (engine.TraceParent, bool) {
	tp, err := engine.ParseTraceParent(v)
	if err != nil {
		fmt.Fprintf(c.stderr, "hookd %s: --traceparent: %v\n", c.name, err)
		return "", false
	}
	return tp, true
}
