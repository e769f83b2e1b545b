package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/api/client"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/daemon"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/human"
	"github.com/hookd/hookd/internal/suggest"
)

func cmdList(c *cli, args []string) int {
	fs := c.flags()
	asJSON := fs.Bool("json", false, "print JSON")
	names := fs.Bool("names", false, "print only the hooks' names, one a line, from their files (for shell completion)")
	_, d, code, ok := c.setup(fs, args, 0, 0)
	if !ok {
		return code
	}
	if *names {
		hooks, _, err := daemon.LoadHooks(d)
		if err != nil {
			return c.errorf("%v", err)
		}
		list := make([]string, len(hooks))
		for i, h := range hooks {
			list[i] = h.Name
		}
		sort.Strings(list)
		for _, n := range list {
			fmt.Fprintln(c.stdout, n)
		}
		return exitOK
	}
	// What the command allocates (the daemon's answer, the hooks, the
	// table: 10 MB with 10,000 hooks) is garbage only when it exits;
	// collecting as it grew was a seventh of the command's CPU.
	restoreGC, _ := daemon.RaiseGCPercent(400)
	defer restoreGC()
	ctx := context.Background()
	cl := client.Dial(d.DB)
	if cl == nil {
		hooks, err := c.offlineHooks(ctx, d)
		if err != nil {
			return c.errorf("%v", err)
		}
		if *asJSON {
			return c.printJSON(hooks)
		}
		fmt.Fprintln(c.stderr, "hookd is not running: next due times are what it would use if started now")
		if err := c.writeHookTable(hooks, time.Now()); err != nil {
			return c.errorf("%v", err)
		}
		return exitOK
	}
	body, err := cl.Get(ctx, "/v1/hooks")
	if err != nil {
		return c.errorf("%v", err)
	}
	hooks, err := api.DecodeHooks(body)
	if err != nil {
		return c.errorf("read the daemon's hooks: %v", err)
	}
	if *asJSON {
		// The daemon's answer, indented as printJSON indents: what
		// encoding the decoded hooks again would print.
		var out bytes.Buffer
		out.Grow(len(body) * 5 / 4)
		if err := json.Indent(&out, bytes.TrimSpace(body), "", "  "); err != nil {
			return c.errorf("read the daemon's hooks: %v", err)
		}
		out.WriteByte('\n')
		if _, err := out.WriteTo(c.stdout); err != nil {
			return c.errorf("%v", err)
		}
		return exitOK
	}
	if err := c.writeHookTable(hooks, time.Now()); err != nil {
		return c.errorf("%v", err)
	}
	return exitOK
}

// writeHookTable writes list's table of hooks to stdout; on a terminal
// FILE, then TRIGGER and IN FLIGHT give way first, NEXT DUE shows only
// how far off it is ("in 3h"), then NAME and LAST give way; when that
// is not enough, FILE, QUEUED, IN FLIGHT and TRIGGER are left out.
func (c *cli) writeHookTable(hooks []engine.HookStatus, now time.Time) error {
	w := c.stdout
	next := func(i int) string {
		if h := &hooks[i]; h.Enabled && !h.Paused && !h.NextDue.IsZero() {
			return human.Relative(h.NextDue.Sub(now))
		}
		return ""
	}
	t := c.layout(hookTable(hooks, now), []int{6, 5, 4, 1},
		cut(6, 8), cut(1, 10), cut(4, 8), compact(2, next), cut(0, 12), cut(3, 12))
	if err := t.write(w); err != nil {
		return err
	}
	// A file that does not load stays in the list, marked, with why.
	for i := range hooks {
		if b := hooks[i].Broken; b != nil {
			if _, err := fmt.Fprintf(w, "BROKEN %s: %s\n", b.File, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// hookTable is list's table of hooks.
func hookTable(hooks []engine.HookStatus, now time.Time) *table {
	t := newTable(7, len(hooks)+1)
	t.row("NAME", "TRIGGER", "NEXT DUE", "LAST", "IN FLIGHT", "QUEUED", "FILE")
	for i := range hooks {
		h := &hooks[i]
		t.add(h.Name)
		if h.Project != "" {
			t.add(" [")
			t.add(h.Project)
			t.add("]")
		}
		if h.Broken != nil {
			t.add(" [BROKEN]")
		}
		t.end()
		t.add(h.Trigger)
		t.end()
		switch {
		case !h.Enabled:
			t.add("disabled")
		case h.Paused:
			t.add("paused")
		case !h.NextDue.IsZero():
			t.buf = h.NextDue.Local().AppendFormat(t.buf, timeLayout)
			t.add(" (")
			t.add(human.Relative(h.NextDue.Sub(now)))
			t.add(")")
		default:
			t.add("-")
		}
		t.end()
		if h.LastStatus == "" {
			t.add("-")
		} else {
			t.add(string(h.LastStatus))
			if h.LastCheckFailed != "" {
				t.add(", check failed: ")
				t.add(h.LastCheckFailed)
			}
			if !h.LastStart.IsZero() {
				t.add(" ")
				t.add(human.Relative(h.LastStart.Sub(now)))
			}
		}
		t.end()
		t.add(orDash(h.InFlight))
		t.end()
		t.buf = strconv.AppendInt(t.buf, int64(h.Queued), 10)
		t.end()
		t.add(h.File)
		t.add("@")
		t.add(h.Version)
		t.end()
	}
	return t
}

// offlineHooks describes the hooks from their files and the store when no
// daemon runs.
func (c *cli) offlineHooks(ctx context.Context, d *config.Daemon) ([]engine.HookStatus, error) {
	l, err := daemon.LoadReport(d)
	if err != nil {
		return nil, err
	}
	hooks := l.Hooks
	for _, e := range l.Errs {
		fmt.Fprintf(c.stderr, "not loaded: %v\n", c.shortErr(e))
	}
	saved := map[string]engine.HookState{}
	var queued []*engine.Run
	if db, err := daemon.OpenStore(d); err == nil {
		defer db.Close()
		if saved, err = db.HookStates(ctx); err != nil {
			return nil, err
		}
		if queued, err = db.QueuedRuns(ctx); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	out := make([]engine.HookStatus, 0, len(hooks))
	for _, h := range hooks {
		st := saved[h.Name]
		hs := engine.HookStatus{
			Name: h.Name, Trigger: h.Trigger.String(), Enabled: h.Enabled, Paused: st.Paused,
			LastRunID: st.LastRunID, LastStatus: st.LastStatus, LastStart: st.LastStart,
			LastCheckFailed: st.LastCheckFailed, File: c.short(h.Source.File), Version: h.Source.Version, Project: h.Project,
		}
		if next := engine.FireTimes(h, now, 1); len(next) > 0 {
			hs.NextDue = next[0]
		}
		for _, r := range queued {
			if r.Hook == h.Name {
				hs.Queued++
			}
		}
		out = append(out, hs)
	}
	for _, b := range l.Broken {
		b := c.shortBroken(b)
		out = append(out, engine.HookStatus{Name: b.Hook, File: b.File, Broken: b})
	}
	slices.SortStableFunc(out, func(a, b engine.HookStatus) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// shortBroken is b with its file named as the user names it (short), in
// its errors too, which begin with it (FILE:LINE: FIELD: MESSAGE).
func (c *cli) shortBroken(b engine.BrokenFile) *engine.BrokenFile {
	short := c.short(b.File)
	if short != b.File {
		errs := make([]string, len(b.Errors))
		for i, e := range b.Errors {
			if rest, ok := strings.CutPrefix(e, b.File); ok {
				e = short + rest
			}
			errs[i] = e
		}
		b.File, b.Errors = short, errs
	}
	return &b
}

func cmdRuns(c *cli, args []string) int {
	fs := c.flags()
	status := fs.String("status", "", "only runs with this status (queued, running, completed, failed, skipped, dropped, cancelled, interrupted)")
	limit := fs.Int("limit", 20, "how many runs")
	before := fs.String("before", "", "only runs older than this run id (paging)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, d, code, ok := c.setup(fs, args, 0, 1)
	if !ok {
		return code
	}
	if *status != "" && !slices.Contains(engine.Statuses, engine.Status(*status)) {
		fmt.Fprintf(c.stderr, "hookd runs: --status must be one of %s (got %q)\n", joinStatuses(engine.Statuses), *status)
		return exitUsage
	}
	if *limit < 1 {
		fmt.Fprintf(c.stderr, "hookd runs: --limit must be >= 1 (got %d)\n", *limit)
		return exitUsage
	}
	db, err := daemon.OpenStore(d)
	if err != nil {
		return c.errorf("%v", err)
	}
	defer db.Close()
	f := engine.RunFilter{Status: engine.Status(*status), Limit: *limit, Before: *before}
	if len(pos) == 1 {
		f.Hook = pos[0]
	}
	runs, err := db.ListRuns(context.Background(), f)
	if err != nil {
		return c.errorf("%v", err)
	}
	if len(runs) == 0 && f.Hook != "" {
		// A hook with no runs is fine; a name that is neither a hook nor
		// in the history is a typo.
		if names, known := c.knownHook(d, f.Hook); !known {
			return c.noHook(f.Hook, names)
		}
	}
	if *asJSON {
		return c.printJSON(runs)
	}
	if err := c.writeRunTable(runs, time.Now()); err != nil {
		return c.errorf("%v", err)
	}
	return exitOK
}

// writeRunTable writes runs' table of runs to stdout; on a terminal
// REASON, then TRIGGER give way first, STARTED shows only how long ago
// it was ("3h ago"), then HOOK and STATUS give way; when that is not
// enough, REASON, TRIGGER and DURATION are left out. The run id stays
// whole (it is what a user copies).
func (c *cli) writeRunTable(runs []*engine.Run, now time.Time) error {
	t := newTable(7, len(runs)+1)
	t.row("ID", "HOOK", "STATUS", "TRIGGER", "STARTED", "DURATION", "REASON")
	starts := make([]time.Time, len(runs))
	for i, r := range runs {
		started := "-"
		if t := firstNonZero(r.StartedAt, r.QueuedAt, r.FinishedAt); !t.IsZero() {
			started, starts[i] = timeText(t), t
		}
		dur := "-"
		if d := r.Duration(); d > 0 {
			dur = human.Duration(d)
		} else if r.Status == engine.StatusRunning && !r.StartedAt.IsZero() {
			dur = human.Duration(now.Sub(r.StartedAt).Truncate(time.Second)) + " so far"
		}
		why := r.Reason
		if r.Repeats > 1 {
			why = repeatsText(r) + ": " + why
		}
		if e := r.ExtraError(); e != "" {
			why = strings.TrimSpace(strings.TrimPrefix(why+" "+e, " "))
		}
		if r.Retry != nil {
			why = fmt.Sprintf("retry %s at %s; %s", r.Retry.RunID, timeText(r.Retry.At), why)
		}
		t.row(r.ID, r.Hook, r.Headline(), r.Trigger, started, dur, engine.OneLine(why, 80))
	}
	ago := func(i int) string { return relativeText(starts[i], now) }
	return c.layout(t, []int{6, 3, 5},
		cut(6, 16), cut(3, 8), compact(4, ago), cut(1, 12), cut(2, 9)).write(c.stdout)
}

// repeatsText says what a collapsed record stands for: "12× from 03-01
// 10:00:00 to 03-01 10:11:00".
func repeatsText(r *engine.Run) string {
	return fmt.Sprintf("%d× from %s to %s", r.Repeats, timeText(r.QueuedAt), timeText(r.FinishedAt))
}

// knownHook reports whether the hooks directory defines name, and lists
// the names it defines.
func (c *cli) knownHook(d *config.Daemon, name string) ([]string, bool) {
	hooks, _, err := daemon.LoadHooks(d)
	if err != nil {
		return nil, false
	}
	names := hookNames(hooks)
	return names, slices.Contains(names, name)
}

// hookNames lists the names of hooks, sorted.
func hookNames(hooks []*engine.Hook) []string {
	names := make([]string, len(hooks))
	for i, h := range hooks {
		names[i] = h.Name
	}
	sort.Strings(names)
	return names
}

// noHook says no hook is named name, with the one among names the user
// most likely meant, else the names when they are few, and exits 1.
func (c *cli) noHook(name string, names []string) int {
	if s := suggest.Closest(name, names); s != "" {
		return c.errorf("no hook named %q; did you mean %s?", name, s)
	}
	if len(names) > 0 && len(names) <= 10 {
		return c.errorf("no hook named %q (hooks: %s)", name, strings.Join(names, ", "))
	}
	return c.errorf("no hook named %q (see `hookd list`, or `hookd validate` if its file has errors)", name)
}

func joinStatuses(ss []engine.Status) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

func firstNonZero(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func cmdRun(c *cli, args []string) int {
	fs := c.flags()
	asJSON := fs.Bool("json", false, "print JSON")
	brief := fs.Bool("brief", false, "only the outcome: status, reason, error and the model's answer")
	pos, d, code, ok := c.setup(fs, args, 1, 1)
	if !ok {
		return code
	}
	db, err := daemon.OpenStore(d)
	if err != nil {
		return c.errorf("%v", err)
	}
	defer db.Close()
	r, err := c.resolveRun(context.Background(), d, db, pos[0])
	if err != nil {
		return c.errorf("%v", err)
	}
	if *asJSON {
		return c.printJSON(r)
	}
	printRun(c, r, *brief)
	if r.Status == engine.StatusRunning {
		c.printProgress(d, r.ID)
	}
	return exitOK
}

// printProgress prints what a run in flight has done so far, as the
// daemon running it says: each finished step, and the current one with
// how long it has run. A run record says nothing of its steps until the
// run is over.
func (c *cli) printProgress(d *config.Daemon, id string) {
	cl := client.Dial(d.DB)
	if cl == nil {
		fmt.Fprintf(c.stdout, "\nhookd is not running: the record says running, but no daemon runs it (it becomes interrupted at the next start)\n")
		return
	}
	var p engine.RunProgress
	if err := cl.Do(context.Background(), "GET", "/v1/runs/"+id+"/progress", nil, &p); err != nil {
		fmt.Fprintf(c.stdout, "\nno progress: %v\n", err)
		return
	}
	now := time.Now()
	w := c.stdout
	fmt.Fprintf(w, "\nrunning for %s:\n", human.Duration(p.Elapsed(now).Truncate(time.Second)))
	for _, s := range p.Steps {
		line := fmt.Sprintf("  %s %s: %s in %s", s.Label(), s.Kind, s.OutcomeText(), human.Duration(s.Duration))
		if s.Error != "" {
			line += ": " + engine.OneLine(s.Error, 120)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "  now: %s\n", doingText(&p, now))
}

// printRun prints a run: its outcome and the model's answer first, then
// the details (trigger, times, tokens, steps, prompt, transcript); brief
// stops after the outcome.
func printRun(c *cli, r *engine.Run, brief bool) {
	w := c.stdout
	fmt.Fprintf(w, "run %s\n", r.ID)
	field := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-10s %s\n", k+":", v)
		}
	}
	field("hook", r.Hook)
	field("project", r.Project)
	field("status", r.Headline())
	field("reason", r.Reason)
	field("error", r.ExtraError())
	if !r.FinishedAt.IsZero() {
		field("finished", timeText(r.FinishedAt)+" (took "+human.Duration(r.Duration())+")")
	}
	if r.Response != "" {
		printBlock(w, "answer", r.Response)
	}
	if brief {
		return
	}
	fmt.Fprintln(w)
	if r.Repeats > 1 {
		field("repeats", repeatsText(r)+" (one record for identical refusals in a row)")
	}
	field("trigger", r.Trigger)
	if a := r.AttemptText(); a != "" {
		if r.RetryOf != "" {
			a += " (retry_of: " + r.RetryOf + ")"
		}
		field("attempt", a)
	}
	if r.Retry != nil {
		field("retry", fmt.Sprintf("attempt %d as run %s at %s", r.Retry.Attempt, r.Retry.RunID, timeText(r.Retry.At)))
	}
	if !r.Slot.IsZero() {
		field("slot", timeText(r.Slot))
	}
	field("event", r.EventType)
	if len(r.Event) > 0 && string(r.Event) != "{}" && string(r.Event) != "null" {
		field("payload", string(r.Event))
	}
	if !r.QueuedAt.IsZero() && (r.StartedAt.IsZero() || r.StartedAt.Sub(r.QueuedAt) > 10*time.Millisecond) {
		field("queued", timeText(r.QueuedAt))
	}
	if !r.StartedAt.IsZero() {
		field("started", timeText(r.StartedAt))
	}
	if r.Tokens.Known {
		field("tokens", fmt.Sprintf("prompt %d, completion %d, cached %d", r.Tokens.Prompt, r.Tokens.Completion, r.Tokens.Cached))
	}
	for _, n := range r.Notes {
		field("note", n)
	}
	for _, s := range r.Steps {
		label := "step_" + strconv.Itoa(s.Index)
		if s.Name != "" {
			label += " (" + s.Name + ")"
		}
		fmt.Fprintf(w, "\n%s %s, %s", label, s.Type, human.Duration(s.Duration))
		if s.ExitCode != nil {
			fmt.Fprintf(w, ", exit %d", *s.ExitCode)
		}
		if s.TimedOut {
			fmt.Fprint(w, ", timed out")
		}
		fmt.Fprintln(w)
		if s.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", s.Error)
		}
		if cn, ok := s.Fields["containment"].(string); ok && cn != "" {
			fmt.Fprintf(w, "  containment: %s\n", cn)
		}
		printBlock(w, "output", s.Output)
		if se, ok := s.Fields["stderr"].(string); ok {
			printBlock(w, "stderr", se)
		}
	}
	if r.Prompt != "" {
		fmt.Fprintln(w)
		printBlock(w, "prompt", r.Prompt)
	}
	printTranscript(w, r)
}

func printBlock(w interface{ Write([]byte) (int, error) }, title, text string) {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return
	}
	fmt.Fprintf(w, "  %s:\n", title)
	for _, line := range strings.Split(text, "\n") {
		fmt.Fprintf(w, "    %s\n", line)
	}
}

func (c *cli) printJSON(v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return c.errorf("%v", err)
	}
	return exitOK
}

func cmdValidate(c *cli, args []string) int {
	fs := c.flags()
	asJSON := fs.Bool("json", false, "print JSON: the hooks that loaded and each error with its file, line and field")
	pos, d, code, ok := c.setup(fs, args, 0, 1)
	if !ok {
		return code
	}
	if len(pos) == 1 {
		d.SetHooksDir(c.path(pos[0]))
	}
	var warns warnings
	// What the hooks need of the environment (a model, its key) is
	// checked against the running daemon's, else this shell's, and says
	// which.
	envFrom, lookup := c.checkedEnv(d)
	checkEnv := func(o *config.Options) { o.Env, o.EnvFrom = lookup, envFrom }
	hooks, hs, errs, err := daemon.CheckAll(d, warns.collect(d), checkEnv)
	if err != nil {
		return c.errorf("%v", err)
	}
	if *asJSON {
		if c.badSettings != nil {
			errs = append([]error{c.badSettings}, errs...) // hookd.yaml's error is one of the check's
		}
		out := validateJSON{Dir: c.short(d.HooksDir), Valid: len(errs) == 0, Hooks: hooks, Handlers: len(hs), Errors: []loadErrorJSON{},
			Warnings: []loadErrorJSON{}, Environment: envFrom}
		for _, w := range warns.sorted() {
			out.Warnings = append(out.Warnings, loadErrorOf(c.shortErr(w)))
		}
		if hooks == nil {
			out.Hooks = []string{}
		}
		for _, e := range errs {
			out.Errors = append(out.Errors, loadErrorOf(c.shortErr(e)))
		}
		if code := c.printJSON(out); code != exitOK || len(errs) == 0 {
			return code
		}
		return exitError
	}
	for _, e := range errs {
		fmt.Fprintln(c.stderr, c.shortErr(e))
	}
	for _, w := range warns.sorted() {
		fmt.Fprintln(c.stderr, "warning: "+c.shortErr(w).Error())
	}
	fmt.Fprintf(c.stdout, "%d hook(s) valid in %s", len(hooks), c.short(d.HooksDir))
	if len(hs) > 0 {
		fmt.Fprintf(c.stdout, ", %d lifecycle handler(s)", len(hs))
	}
	code = exitOK
	switch {
	case len(errs) > 0:
		fmt.Fprintf(c.stdout, ", %d error(s)\n", len(errs))
		code = exitError
	case c.badSettings != nil:
		fmt.Fprintf(c.stdout, "; %s is invalid\n", c.short(d.SettingsPath))
		code = exitError
	default:
		fmt.Fprintln(c.stdout)
	}
	fmt.Fprintf(c.stdout, "checked against %s\n", envFrom)
	return code
}

// What validate checks the hooks' needs of the environment against.
const (
	daemonEnv = "the running daemon's environment"
	shellEnv  = "this shell's environment"
)

// checkedEnv is the environment validate checks what hooks need of it
// against, and its name: the running daemon's, which tells the names of
// its variables (GET /v1/env), never their values; else this shell's. A
// variable set to "" counts as unset, as hookd reads it.
func (c *cli) checkedEnv(d *config.Daemon) (string, func(string) (string, bool)) {
	shell := func(k string) (string, bool) {
		v, _ := c.lookupEnv(k)
		return v, v != ""
	}
	cl := client.Dial(d.DB)
	if cl == nil {
		return shellEnv, shell
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var names api.EnvNames
	if err := cl.Do(ctx, "GET", "/v1/env", nil, &names); err != nil {
		fmt.Fprintf(c.stderr, "hookd validate: the running daemon does not tell its environment (%v); checking %s\n", err, shellEnv)
		return shellEnv, shell
	}
	return daemonEnv, func(k string) (string, bool) { return "", names.Has(k) }
}

func cmdNext(c *cli, args []string) int {
	fs := c.flags()
	n := fs.Int("n", 5, "how many fire times")
	asJSON := fs.Bool("json", false, "print JSON: the hook, its trigger, the schedule's time zone and the times")
	pos, d, code, ok := c.setup(fs, args, 1, 1)
	if !ok {
		return code
	}
	if *n < 1 {
		fmt.Fprintf(c.stderr, "hookd next: -n must be >= 1 (got %d)\n", *n)
		return exitUsage
	}
	hooks, _, err := daemon.LoadHooks(d)
	if err != nil {
		return c.errorf("%v", err)
	}
	for _, h := range hooks {
		if h.Name != pos[0] {
			continue
		}
		times := engine.FireTimes(h, time.Now(), *n)
		loc := h.Trigger.Location
		if loc == nil {
			loc = time.Local
		}
		if *asJSON {
			return c.printJSON(nextOf(h, times, loc))
		}
		if len(times) == 0 && h.Trigger.Kind == engine.TriggerAt {
			fmt.Fprintf(c.stdout, "%s fires once, at %s: that time has passed (it fired then, or once when hookd next started; see `hookd runs %s`)\n",
				h.Name, h.Trigger.At.In(loc).Format(timeLayout+" Mon"), h.Name)
			return exitOK
		}
		if len(times) == 0 {
			fmt.Fprintf(c.stdout, "%s has no schedule (%s)\n", h.Name, h.Trigger.String())
			return exitOK
		}
		for _, t := range times {
			fmt.Fprintln(c.stdout, t.In(loc).Format(timeLayout+" Mon")) // the weekday helps read a schedule
		}
		return exitOK
	}
	return c.noHook(pos[0], hookNames(hooks))
}

func cmdPause(c *cli, args []string) int  { return setPaused(c, args, true) }
func cmdResume(c *cli, args []string) int { return setPaused(c, args, false) }

func setPaused(c *cli, args []string, paused bool) int {
	fs := c.flags()
	waitLock := waitLockFlag(fs)
	pos, d, code, ok := c.setup(fs, args, 1, 1)
	if !ok {
		return code
	}
	name := pos[0]
	verb := map[bool]string{true: "paused", false: "resumed"}[paused]
	ctx := context.Background()
	cl, o, code, done := c.reachOrLock(ctx, d, *waitLock)
	if done {
		return code
	}
	if cl != nil {
		if err := cl.Do(ctx, "POST", "/v1/hooks/"+name+"/"+c.name, nil, nil); err != nil {
			return c.errorf("%v", err)
		}
		fmt.Fprintf(c.stdout, "%s %s\n", name, verb)
		return exitOK
	}
	// No daemon: check the hook exists, then record the state for the
	// next start.
	defer o.Lock.Unlock()
	defer o.Store.Close()
	hooks, _, err := daemon.LoadHooks(d)
	if err != nil {
		return c.errorf("%v", err)
	}
	found := false
	for _, h := range hooks {
		found = found || h.Name == name
	}
	if !found {
		return c.errorf("no hook named %q", name)
	}
	if err := o.Store.SetPaused(ctx, name, paused); err != nil {
		return c.errorf("%v", err)
	}
	fmt.Fprintf(c.stdout, "%s %s (hookd is not running; it applies when it starts)\n", name, verb)
	return exitOK
}
