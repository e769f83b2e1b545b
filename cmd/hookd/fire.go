package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hookd/hookd/engine"
)

func cmdFire(c *cli, args []string) int {
	fs := c.flags()
	wait := fs.Bool("wait", false, "wait for the run to end; exit 0 if it completed or was skipped, 1 otherwise")
	force := fs.Bool("force", false, "skip the cooldown (never the in-flight gate)")
	eventJSON := fs.String("event", "", "event payload as a JSON object, visible as {{event}}")
	pos, d, code, ok := c.setup(fs, args, 1, 1)
	if !ok {
		return code
	}
	name := pos[0]
	event, ok := c.jsonObject("event", *eventJSON)
	if !ok {
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if cl := dial(d.DB); cl != nil {
		var ans runAnswer
		err := cl.do(ctx, "POST", "/v1/hooks/"+name+"/fire", fireRequest{Event: event, Force: *force}, &ans)
		if code, done := c.fireRefused(err); done {
			return code
		}
		c.printFired(ans.Run)
		if !*wait {
			return exitOK
		}
		var final engine.Run
		if err := cl.do(ctx, "GET", "/v1/runs/"+ans.Run.ID+"/wait", nil, &final); err != nil {
			return c.errorf("wait for run %s: %v", ans.Run.ID, err)
		}
		return c.printOutcome(&final)
	}

	// No daemon: run it here, holding the database lock.
	l, err := c.openLocal(d, newLogger(d.LogFormat, os.Stderr, slog.LevelWarn), true)
	if err != nil {
		if errors.Is(err, engine.ErrLocked) {
			return c.errorf("%v; its socket %s does not answer", err, socketPath(d.DB))
		}
		return c.errorf("%v", err)
	}
	defer l.close()
	run, err := l.eng.Fire(ctx, name, engine.FireOptions{Event: event, Force: *force})
	if code, done := c.fireRefused(err); done {
		return code
	}
	c.printFired(run)
	final, err := l.eng.Wait(ctx, run.ID)
	if err != nil {
		// Interrupted: cancel the run and record it so.
		sctx, cancel := context.WithTimeout(context.Background(), 0)
		defer cancel()
		l.eng.Shutdown(sctx)
		return c.errorf("run %s cancelled: %v", run.ID, err)
	}
	code = c.printOutcome(final)
	if !*wait {
		return exitOK
	}
	return code
}

// fireRefused reports errors of a fire: a gate refusal exits 75.
func (c *cli) fireRefused(err error) (int, bool) {
	if err == nil {
		return 0, false
	}
	var gate *engine.GateError
	var remote *remoteError
	switch {
	case errors.As(err, &gate), errors.As(err, &remote) && remote.body.Gate != "":
		fmt.Fprintf(c.stderr, "hookd fire: refused: %v\n", err)
		return exitRefused, true
	case errors.Is(err, engine.ErrNotFound), errors.As(err, &remote) && remote.status == 404:
		return c.errorf("%v (see `hookd list`, or `hookd validate` if its file has errors)", err), true
	}
	return c.errorf("%v", err), true
}

func (c *cli) printFired(run *engine.Run) {
	fmt.Fprintln(c.stdout, run.ID)
	c.flush() // --wait waits after this
	if run.Status == engine.StatusQueued {
		fmt.Fprintf(c.stderr, "queued: %s\n", run.Reason)
	}
}

// printOutcome prints a final run's status line and returns the exit code
// --wait uses: 0 for completed or skipped, 1 otherwise.
func (c *cli) printOutcome(run *engine.Run) int {
	line := fmt.Sprintf("%s %s in %s", run.Hook, run.Headline(), run.Duration().Round(time.Millisecond))
	if run.Reason != "" {
		line += ": " + run.Reason
	}
	if run.Error != "" {
		line += ": " + run.Error
	}
	fmt.Fprintln(c.stderr, line)
	switch run.Status {
	case engine.StatusCompleted, engine.StatusSkipped:
		return exitOK
	}
	return exitError
}

func cmdEmit(c *cli, args []string) int {
	fs := c.flags()
	dataJSON := fs.String("data", "", "payload as a JSON object (key=value arguments are merged into it)")
	id := fs.String("id", "", "event id; an id seen before is not dispatched again")
	wait := fs.Bool("wait", false, "wait for the runs it started; exit 1 if one did not complete or skip")
	pos, d, code, ok := c.setup(fs, args, 1, -1)
	if !ok {
		return code
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	req := emitRequest{ID: *id, Type: pos[0], Data: data}

	if cl := dial(d.DB); cl != nil {
		var ans emitAnswer
		if err := cl.do(ctx, "POST", "/v1/events", req, &ans); err != nil {
			return c.errorf("%v", err)
		}
		c.printEmitted(ans)
		if *wait {
			worst := exitOK
			for _, r := range ans.Runs {
				var final engine.Run
				if err := cl.do(ctx, "GET", "/v1/runs/"+r.ID+"/wait", nil, &final); err != nil {
					return c.errorf("wait for run %s: %v", r.ID, err)
				}
				worst = max(worst, c.printOutcome(&final))
			}
			return worst
		}
		return exitOK
	}

	l, err := c.openLocal(d, newLogger(d.LogFormat, os.Stderr, slog.LevelWarn), true)
	if err != nil {
		return c.errorf("%v", err)
	}
	defer l.close()
	ev := &engine.Event{ID: req.ID, Type: req.Type, Data: req.Data, Source: "cli"}
	runs, err := l.eng.Emit(ctx, ev)
	if errors.Is(err, engine.ErrDuplicateEvent) {
		c.printEmitted(emitAnswer{EventID: ev.ID, Seq: ev.Seq, Duplicate: true})
		return exitOK
	}
	if err != nil {
		return c.errorf("%v", err)
	}
	c.printEmitted(emitAnswer{EventID: ev.ID, Seq: ev.Seq, Runs: runs})
	worst := exitOK
	for _, r := range runs {
		final, err := l.eng.Wait(ctx, r.ID)
		if err != nil {
			return c.errorf("wait for run %s: %v", r.ID, err)
		}
		worst = max(worst, c.printOutcome(final))
	}
	if !*wait {
		return exitOK
	}
	return worst
}

func (c *cli) printEmitted(ans emitAnswer) {
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
	}
	fmt.Fprintf(c.stdout, "event %s: %d run(s)\n", ans.EventID, len(ans.Runs))
	for _, r := range ans.Runs {
		fmt.Fprintf(c.stdout, "  %s %s (%s)\n", r.ID, r.Hook, r.Status)
	}
}
