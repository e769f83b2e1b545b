package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/api/client"
	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/human"
)

func cmdStatus(c *cli, args []string) int {
	fs := c.flags()
	asJSON := fs.Bool("json", false, "print JSON")
	_, d, code, ok := c.setup(fs, args, 0, 0)
	if !ok {
		return code
	}
	settings := c.short(d.SettingsPath)
	switch {
	case c.badSettings != nil:
		settings = invalidSettings(settings, c.badSettings, c.settingsUsed)
	case d.File == "":
		settings = "none (" + settings + " does not exist: the defaults)"
	}
	cl := client.Dial(d.DB)
	if cl == nil {
		fmt.Fprintf(c.stdout, "hookd is not running (no answer on %s)\nsettings:  %s\n", c.short(api.SocketPath(d.DB)), settings)
		return exitError
	}
	var rep api.StatusReport
	if err := cl.Do(context.Background(), "GET", "/v1/status", nil, &rep); err != nil {
		return c.errorf("%v", err)
	}
	if *asJSON {
		if code := c.printJSON(rep); code != exitOK || len(rep.Broken) == 0 {
			return code
		}
		return exitError
	}
	printStatus(c.stdout, c.short(api.SocketPath(d.DB)), settings, &rep)
	if len(rep.Broken) > 0 {
		return exitError // like a failed unit: until the file loads
	}
	return exitOK
}

// printStatus prints the terminal summary of `hookd status`.
func printStatus(w io.Writer, socket, settings string, rep *api.StatusReport) {
	fmt.Fprintf(w, "hookd is running (pid %d, up %s, socket %s)\n", rep.PID, rep.Uptime, socket)
	fmt.Fprintf(w, "settings:  %s\n", settings)
	fmt.Fprintf(w, "in flight: %d\n", len(rep.InFlight))
	writeInFlight(w, rep.Running, time.Now())
	fmt.Fprintf(w, "queued:    %d %s\n", len(rep.Queued), strings.Join(rep.Queued, " "))
	if len(rep.Broken) > 0 {
		fmt.Fprintf(w, "BROKEN:    %d hook file(s) do not load\n", len(rep.Broken))
		for _, b := range rep.Broken {
			fmt.Fprintf(w, "  %s: %s\n", b.File, b)
		}
	}
	if s := rep.Store; s != nil {
		fmt.Fprintf(w, "STORE:     %s; %d record(s) waiting to be written, %d slot(s) to record missed", s, s.Waiting, s.Slots)
		if s.Lost > 0 {
			fmt.Fprintf(w, ", %d record(s) lost", s.Lost)
		}
		fmt.Fprintln(w)
	}
	if len(rep.Retries) > 0 {
		fmt.Fprintf(w, "retrying:  %d", len(rep.Retries))
		for _, r := range rep.Retries {
			fmt.Fprintf(w, " %s (%s attempt %d of %d at %s)", r.RunID, r.Hook, r.Attempt, r.Attempts, timeText(r.At))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "overdue:   %d %s (past due by more than %s)\n", len(rep.Overdue), strings.Join(rep.Overdue, " "), rep.OverdueGrace)
	if rep.Cluster != nil {
		printCluster(w, rep.Cluster)
	}
	writeSandbox(w, rep.Sandbox)

	hooks := map[string]bool{}
	for _, m := range []api.CountsBy{rep.Runs, rep.Skips, rep.Drops, rep.Tokens, rep.CheckFailed} {
		for h := range m {
			hooks[h] = true
		}
	}
	if len(hooks) == 0 {
		fmt.Fprintln(w, "\nno runs since hookd started")
	} else {
		fmt.Fprintln(w, "\nsince hookd started:")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "HOOK\tCOMPLETED\tCHECK FAILED\tFAILED\tSKIPPED\tDROPPED\tCANCELLED\tDURATION (MEAN/P95)\tLATENESS (MEAN/P95)\tTOKENS\tSKIP/DROP REASONS, SHORT-CIRCUITS")
		for _, h := range sortedKeys(hooks) {
			r := rep.Runs[h]
			reasons := []string{}
			for _, m := range []api.Counts{rep.Skips[h], rep.Drops[h]} {
				for _, k := range sortedKeys(m) {
					reasons = append(reasons, fmt.Sprintf("%s %d", k, int64(m[k])))
				}
			}
			if n := rep.ShortCircuits[h]; n > 0 {
				reasons = append(reasons, fmt.Sprintf("short_circuit %d", int64(n)))
			}
			tok := rep.Tokens[h]
			tokens := "-"
			if total := tok["prompt"] + tok["completion"]; total > 0 {
				tokens = fmt.Sprintf("%d", int64(total))
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", h,
				int64(r["completed"]), int64(rep.CheckFailed[h]["completed"]), int64(r["failed"]), int64(r["skipped"]), int64(r["dropped"]), int64(r["cancelled"]),
				distText(rep.Durations[h]), distText(rep.Lateness[h]), tokens, orDash(strings.Join(reasons, ", ")))
		}
		tw.Flush()
	}
	writeSpend(w, &rep.Spend)
	if len(rep.ToolCalls) > 0 {
		fmt.Fprintln(w, "\ntool calls:")
		for _, tool := range sortedKeys(rep.ToolCalls) {
			var parts []string
			for _, o := range sortedKeys(rep.ToolCalls[tool]) {
				parts = append(parts, fmt.Sprintf("%s %d", o, int64(rep.ToolCalls[tool][o])))
			}
			fmt.Fprintf(w, "  %s: %s\n", tool, strings.Join(parts, ", "))
		}
	}
	if db := rep.Database; db != nil {
		switch {
		case db.Error != "":
			fmt.Fprintf(w, "\ndatabase:  %s\n", db.Error)
		case db.Kind == "postgres":
			fmt.Fprintf(w, "\ndatabase:  %s (PostgreSQL %s)\n", human.Size(db.Bytes), db.Path)
		default:
			fmt.Fprintf(w, "\ndatabase:  %s (WAL %s, free inside %s)\n", human.Size(db.Bytes), human.Size(db.WALBytes), human.Size(db.FreeBytes))
		}
		switch p := db.LastPrune; {
		case p == nil:
			fmt.Fprintln(w, "pruned:    not yet since hookd started")
		case p.Error != "":
			fmt.Fprintf(w, "pruned:    %s, failed: %s\n", timeText(p.At), p.Error)
		default:
			fmt.Fprintf(w, "pruned:    %s: %d runs, %d skip/drop records, %d events; freed %s\n",
				timeText(p.At), p.Runs, p.Skipped, p.Events, human.Size(p.FreedBytes))
		}
	}
	n := rep.Notifications
	if n["delivered"]+n["undeliverable"]+n["dropped"] > 0 {
		fmt.Fprintf(w, "\nnotifications: %d delivered, %d undeliverable, %d dropped\n",
			int64(n["delivered"]), int64(n["undeliverable"]), int64(n["dropped"]))
	}
	if len(rep.Events) > 0 {
		var parts []string
		for _, src := range sortedKeys(rep.Events) {
			parts = append(parts, fmt.Sprintf("%s %d", src, int64(rep.Events[src])))
		}
		fmt.Fprintf(w, "events: %s\n", strings.Join(parts, ", "))
	}
}

// writeSpend writes the token usage against the budgets, when a budget is
// set or a model was used in the last day.
func writeSpend(w io.Writer, sp *budget.Spend) {
	if !sp.Active() {
		return
	}
	d := sp.Daemon
	fmt.Fprintln(w, "\nspend (runs finished in the last 1h and 24h, sliding; tokens as the servers reported them):")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  BUDGET\tLAST 1H\tLAST 24H\tMAX PER RUN")
	fmt.Fprintf(tw, "  all hooks (hookd.yaml)\t%s\t%s\t-\n", d.Hour.Text(sp.Priced), d.Day.Text(sp.Priced))
	for _, h := range sortedKeys(sp.Hooks) {
		hw := sp.Hooks[h]
		perRun := "-"
		if hw.MaxTokensPerRun > 0 {
			perRun = fmt.Sprintf("%d tokens", hw.MaxTokensPerRun)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", h, hw.Hour.Text(sp.Priced), hw.Day.Text(sp.Priced), perRun)
	}
	tw.Flush()
	// The runs with unreported usage are said once, under the table,
	// with the hooks they were runs of, not in every window of every row.
	if u := d.UnreportedText(); u != "" {
		var of []string
		for _, h := range sortedKeys(sp.Hooks) {
			if n := sp.Hooks[h].Day.Unreported; n > 0 {
				of = append(of, fmt.Sprintf("%s %d", h, n))
			}
		}
		fmt.Fprintf(w, "  %s (their servers reported no tokens; those calls count 0): %s\n", u, strings.Join(of, ", "))
	}
}

func distText(d api.Dist) string {
	if d.Count == 0 {
		return "-"
	}
	p95 := "+Inf"
	if d.P95 >= 0 {
		p95 = "≤" + secs(d.P95)
	}
	return secs(d.Mean) + "/" + p95
}

func secs(s float64) string {
	return human.Duration(time.Duration(s * float64(time.Second)))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeInFlight writes one line per run in flight: its hook, id, how long
// it has run, and what it is doing.
func writeInFlight(w io.Writer, runs []engine.RunProgress, now time.Time) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, p := range runs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Hook, p.RunID, human.Duration(p.Elapsed(now).Truncate(time.Second)), doingText(&p, now))
	}
	tw.Flush()
}

// doingText says what a run in flight is doing: "step_1 (build) shell
// for 35s", "model stage: 2 calls, 3 tool calls".
func doingText(p *engine.RunProgress, now time.Time) string {
	since := human.Duration(max(now.Sub(p.Since), 0).Truncate(time.Second))
	switch {
	case p.Current != nil:
		return fmt.Sprintf("%s %s for %s", p.Current.Label(), p.Current.Kind, since)
	case p.Rounds > 0 || p.ToolCalls > 0:
		return fmt.Sprintf("model stage: %d %s, %d %s (last %s ago)", p.Rounds, plural(p.Rounds, "call", "calls"),
			p.ToolCalls, plural(p.ToolCalls, "tool call", "tool calls"), since)
	case len(p.Steps) > 0:
		return fmt.Sprintf("%d %s done (%s since the last)", len(p.Steps), plural(len(p.Steps), "step", "steps"), since)
	}
	return "starting"
}
