package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/daemon"
	"github.com/hookd/hookd/engine"
)

// eventsScan is how many of the newest stored events `hookd events`
// reads to find --limit of them (hookd's own are left out unless --all).
const eventsScan = 1000

// cmdEvents is `hookd events`: the newest stored events, newest first,
// each with its fate: the runs it started, the gates that refused it, the
// hooks whose where: rejected it, the handler that claimed it, or that no
// hook listens to its type.
func cmdEvents(c *cli, args []string) int {
	fs := c.flags()
	typ := fs.String("type", "", "only events of this type (exact, e.g. deploy.finished)")
	limit := fs.Int("limit", 20, "how many events")
	all := fs.Bool("all", false, "include hookd's own events (hook.run.*, hook.step.*, hookd.*)")
	asJSON := fs.Bool("json", false, "print JSON: the events as GET /v1/events gives them, with their fate")
	_, d, code, ok := c.setup(fs, args, 0, 0)
	if !ok {
		return code
	}
	if *limit < 1 {
		fmt.Fprintf(c.stderr, "hookd events: --limit must be >= 1 (got %d)\n", *limit)
		return exitUsage
	}
	db, err := daemon.OpenStore(d)
	if err != nil {
		return c.errorf("%v", err)
	}
	defer db.Close()
	evs, err := db.ListEvents(context.Background(), *typ, max(*limit, eventsScan))
	if err != nil {
		return c.errorf("%v", err)
	}
	out := make([]api.Event, 0, *limit)
	for _, ev := range evs {
		if len(out) == *limit {
			break
		}
		if *all || *typ != "" || !engine.EngineEventType(ev.Type) {
			out = append(out, api.EventOf(ev))
		}
	}
	if *asJSON {
		return c.printJSON(out)
	}
	if err := c.writeEventTable(out, time.Now()); err != nil {
		return c.errorf("%v", err)
	}
	return exitOK
}

// writeEventTable writes events' table of events to stdout; on a
// terminal FATE gives way first, TIME shows only how long ago it was
// ("3h ago"), then SOURCE and TYPE give way; when that is not enough,
// FATE and SOURCE are left out.
func (c *cli) writeEventTable(out []api.Event, now time.Time) error {
	t := newTable(5, len(out)+1)
	t.row("SEQ", "TIME", "TYPE", "SOURCE", "FATE")
	for _, ev := range out {
		when := "-"
		if !ev.Time.IsZero() {
			when = timeText(ev.Time)
		}
		t.row(strconv.FormatInt(ev.Seq, 10), when, ev.Type, ev.Source, engine.OneLine(fateLine(ev.Type, ev.Fate), 160))
	}
	ago := func(i int) string { return relativeText(out[i].Time, now) }
	return c.layout(t, []int{4, 3},
		cut(4, 20), compact(1, ago), cut(3, 8), cut(2, 16)).write(c.stdout)
}

// fateLine says an event's fate on one line: its text (EventFate.Text),
// then the runs: "1 run(s): RUN HOOK". "-" when none is recorded:
// hookd's own events, and an event not dispatched yet.
func fateLine(typ string, f *engine.EventFate) string {
	if f == nil {
		return "-"
	}
	s := f.Text(typ)
	if len(f.Runs) == 0 {
		return s
	}
	runs := make([]string, 0, len(f.Runs))
	for _, r := range f.Runs {
		if r.Gate != "" {
			runs = append(runs, fmt.Sprintf("%s %s refused: %s", r.ID, r.Hook, r.Gate))
		} else {
			runs = append(runs, r.ID+" "+r.Hook)
		}
	}
	return s + ": " + strings.Join(runs, ", ")
}
