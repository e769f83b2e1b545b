package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/daemon"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
)

// cmdReplay replays recorded runs against the hook as it is now (or a
// given file, model or server): the prompt is rendered again from the
// recorded context, the model is called, and its tool calls are answered
// from the record (engine.Replay). Nothing is written to the run
// history; the tokens count in the spend ledger as a replay's, through
// the daemon when one runs, else holding the database lock.
func cmdReplay(c *cli, args []string) int {
	fs := c.flags()
	hookRef := fs.String("hook", "", "replay with this hook: a hook file (a path ending in .yaml or .yml) or a hook's name (default: the recorded run's hook, as hooks.d has it now)")
	model := fs.String("model", "", "ask this model instead of the hook's")
	baseURL := fs.String("base-url", "", "ask the chat-completions server at this URL instead of the hook's")
	last := fs.Int("last", 0, "with --hook: replay the hook's last N runs that reached the model and print a summary")
	liveTools := fs.Bool("live-tools", false, "run the model's tool calls, under the hook's containment, instead of answering them from the record")
	liveSteps := fs.Bool("live-steps", false, "run the hook's steps again instead of reading their results from the record")
	asJSON := fs.Bool("json", false, "print the replay (with --last: every replay and the summary) as JSON")
	waitLock := waitLockFlag(fs)
	pos, d, code, ok := c.setup(fs, args, 0, 1)
	if !ok {
		return code
	}
	switch {
	case *last < 0:
		fmt.Fprintln(c.stderr, "hookd replay: --last must be 1 or more")
		return exitUsage
	case *last > 0 && len(pos) > 0:
		fmt.Fprintln(c.stderr, "hookd replay: give a RUN, or --hook NAME --last N, not both")
		return exitUsage
	case *last > 0 && *hookRef == "":
		fmt.Fprintln(c.stderr, "hookd replay: --last N needs --hook NAME (whose runs to replay)")
		return exitUsage
	case *last == 0 && len(pos) == 0:
		fmt.Fprintln(c.stderr, "hookd replay: which run? give a RUN (an id, a unique prefix, a hook's name or last), or --hook NAME --last N")
		return exitUsage
	}
	c.quiet = *asJSON
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The tokens are recorded through the daemon, or with none here,
	// holding the database lock (as `hookd pause` does).
	var db engine.Store
	cl, lockHeld, code, done := c.reachOrLock(ctx, d, *waitLock)
	if done {
		return code
	}
	if cl != nil {
		rdb, closeDB, err := previewStore(d)
		if err != nil {
			return c.errorf("%v", err)
		}
		defer closeDB()
		db = readOnlyStore{rdb}
	} else {
		defer lockHeld.Lock.Unlock()
		defer lockHeld.Store.Close()
		db = lockHeld.Store
	}

	hooks, errs, err := daemon.LoadHooks(d)
	if err != nil {
		return c.errorf("%v", err)
	}
	var (
		recs  []*engine.Run
		fixed *engine.Hook
	)
	loadHook := func(defaultName string) bool {
		if fixed, err = c.replayHook(d, hooks, *hookRef, defaultName); err != nil {
			for _, e := range errs {
				fmt.Fprintf(c.stderr, "not loaded: %v\n", c.shortErr(e))
			}
			c.errorf("%v", err)
			return false
		}
		return true
	}
	if *last > 0 {
		if !loadHook("") {
			return exitError
		}
		if recs, err = replayableRuns(ctx, db, fixed.Name, *last); err != nil {
			return c.errorf("%v", err)
		}
		if len(recs) == 0 {
			return c.errorf("hook %s has no recorded run that reached the model", fixed.Name)
		}
	} else {
		rec, err := c.resolveRun(ctx, d, db, pos[0])
		if err != nil {
			return c.errorf("%v", err)
		}
		if err := engine.Replayable(rec); err != nil {
			return c.errorf("%v", err)
		}
		recs = []*engine.Run{rec}
		// A hook file without a name: is a new version of the recorded
		// run's hook, whose budget the replay spends.
		if !loadHook(rec.Hook) {
			return exitError
		}
	}

	log := daemon.NewLogger(d.LogFormat, c.log, slog.LevelWarn)
	eng, closeEng, err := daemon.ReplayEngine(d, hooks, db, log)
	if err != nil {
		return c.errorf("%v", err)
	}
	defer closeEng()
	// Tokens spent are counted even when Ctrl-C stopped the replay
	// (else it would be a way around the budgets).
	record := func(u *budget.Usage) error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if cl != nil {
			return cl.Do(rctx, "POST", "/v1/usage", u, nil)
		}
		return eng.AddUsage(rctx, u)
	}
	opts := engine.ReplayOptions{LiveSteps: *liveSteps, LiveTools: *liveTools}
	var reports []replayJSON
	failed, refused := false, false
	for _, rec := range recs {
		h := fixed
		if h == nil {
			if h = findHook(hooks, rec.Hook); h == nil {
				return c.noHook(rec.Hook, hookNames(hooks))
			}
		}
		h = withEndpoint(h, *model, *baseURL)
		if len(recs) > 1 && !c.quiet {
			fmt.Fprintf(c.stderr, "replaying %s (%d of %d)\n", rec.ID, len(reports)+1, len(recs))
		}
		rp, err := eng.Replay(ctx, rec, h, opts)
		if err != nil {
			if g, ok := errors.AsType[*engine.GateError](err); ok {
				// The replays made before it spent their tokens: they
				// are shown all the same.
				fmt.Fprintf(c.stderr, "hookd replay: refused: %v\n", g)
				if len(reports) > 0 {
					fmt.Fprintf(c.stderr, "hookd replay: %d of %d runs replayed before the budget refused the rest\n", len(reports), len(recs))
				}
				refused = true
				break
			}
			return c.errorf("replay of run %s: %v", rec.ID, err)
		}
		if err := record(rp.Usage); err != nil {
			fmt.Fprintf(c.stderr, "hookd replay: the replay's tokens were not counted in the spend ledger: %v\n", err)
			failed = true
		}
		reports = append(reports, replayOf(rp))
		failed = failed || rp.Outcome() == engine.ReplayFailed
		if ctx.Err() != nil {
			break
		}
	}

	if len(reports) == 0 {
		return exitRefused // refused before any replay
	}
	switch {
	case *asJSON && *last > 0:
		if code := c.printJSON(replaySummaryOf(reports)); code != exitOK {
			return code
		}
	case *asJSON:
		if code := c.printJSON(reports[0]); code != exitOK {
			return code
		}
	case *last > 0:
		c.printReplaySummary(reports)
	default:
		c.printReplay(&reports[0])
	}
	switch {
	case refused:
		return exitRefused
	case failed:
		return exitError
	}
	return exitOK
}

// replayHook is the hook --hook names: a hook file, read as hooks.d
// reads one (named defaultName when it has no name: and defaultName is
// set, else by its file's name), or a hook's name; nil when ref is ""
// (each run's own hook).
func (c *cli) replayHook(d *config.Daemon, hooks []*engine.Hook, ref, defaultName string) (*engine.Hook, error) {
	if ref == "" {
		return nil, nil
	}
	ext := filepath.Ext(ref)
	if ext != ".yaml" && ext != ".yml" {
		if h := findHook(hooks, ref); h != nil {
			return h, nil
		}
		return nil, fmt.Errorf("no hook named %q (a hook file is a path ending in .yaml or .yml)", ref)
	}
	path := c.path(ref)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--hook: %w", err)
	}
	defer f.Close()
	opts := d.HookOptions()
	opts.DefaultName = defaultName
	if opts.DefaultName == "" {
		opts.DefaultName = strings.TrimSuffix(filepath.Base(path), ext)
	}
	if opts.Root == "" {
		if abs, err := filepath.Abs(d.HooksDir); err == nil {
			opts.Root = filepath.Dir(abs)
		}
	}
	return config.ParseHook(f, path, opts)
}

func findHook(hooks []*engine.Hook, name string) *engine.Hook {
	for _, h := range hooks {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// withEndpoint is h asking model at baseURL instead, where given.
func withEndpoint(h *engine.Hook, model, baseURL string) *engine.Hook {
	if model == "" && baseURL == "" {
		return h
	}
	cp := *h
	if model != "" {
		cp.LLM.Model = model
	}
	if baseURL != "" {
		cp.LLM.BaseURL = baseURL
	}
	return &cp
}

// replayableRuns returns up to n of hook's latest runs that reached the
// model, newest first.
func replayableRuns(ctx context.Context, db engine.Store, hook string, n int) ([]*engine.Run, error) {
	var out []*engine.Run
	err := engine.EachRun(ctx, db, engine.RunFilter{Hook: hook}, func(r *engine.Run) (bool, error) {
		if engine.Replayable(r) != nil {
			return true, nil
		}
		full, err := db.GetRun(ctx, r.ID)
		if err != nil {
			return false, err
		}
		out = append(out, full)
		return len(out) < n, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// replayJSON is one replay as `hookd replay --json` prints it.
type replayJSON struct {
	Run           string               `json:"run"` // the recorded run's id
	Hook          string               `json:"hook"`
	Outcome       engine.ReplayOutcome `json:"outcome"` // same, changed, diverged or failed
	PromptChanged bool                 `json:"prompt_changed"`
	Recorded      replaySideJSON       `json:"recorded"`
	Replay        replaySideJSON       `json:"replay"`
	NotRecorded   []engine.ToolUse     `json:"not_recorded,omitempty"` // tool calls the record had no result for
	Redacted      []string             `json:"redacted,omitempty"`     // where the recorded context was redacted
	Notes         []string             `json:"notes,omitempty"`
}

// replaySideJSON is one side of a replay: the recorded run, or the
// replay.
type replaySideJSON struct {
	Status engine.Status    `json:"status"`
	Cause  engine.Cause     `json:"cause,omitempty"`
	Error  string           `json:"error,omitempty"`
	Model  string           `json:"model,omitempty"`
	Prompt string           `json:"prompt"`
	Answer string           `json:"answer"`
	Tokens engine.Tokens    `json:"tokens"`
	Tools  []engine.ToolUse `json:"tools"`
}

func sideOf(r *engine.Run, model string) replaySideJSON {
	tools := r.Tools
	if tools == nil {
		tools = []engine.ToolUse{}
	}
	return replaySideJSON{Status: r.Status, Cause: r.Cause, Error: r.Error, Model: model, Prompt: r.Prompt,
		Answer: r.Response, Tokens: r.Tokens, Tools: tools}
}

func replayOf(rp *engine.Replay) replayJSON {
	recModel := ""
	if tr, err := agent.DecodeTranscript(rp.Recorded); err == nil && tr != nil {
		recModel = tr.Model
	}
	return replayJSON{
		Run: rp.Recorded.ID, Hook: rp.Run.Hook, Outcome: rp.Outcome(), PromptChanged: rp.PromptChanged,
		Recorded: sideOf(rp.Recorded, recModel), Replay: sideOf(rp.Run, rp.Model),
		NotRecorded: rp.NotRecorded, Redacted: rp.Redacted, Notes: rp.Notes,
	}
}

// replaySummaryJSON is `hookd replay --last N --json`.
type replaySummaryJSON struct {
	Replays []replayJSON                 `json:"replays"`
	Counts  map[engine.ReplayOutcome]int `json:"counts"` // same, changed, diverged, failed
	Tokens  struct {
		Recorded int64 `json:"recorded"` // prompt + completion of the recorded runs
		Replay   int64 `json:"replay"`
	} `json:"tokens"`
}

func replaySummaryOf(reports []replayJSON) replaySummaryJSON {
	s := replaySummaryJSON{Replays: reports, Counts: map[engine.ReplayOutcome]int{
		engine.ReplaySame: 0, engine.ReplayChanged: 0, engine.ReplayDiverged: 0, engine.ReplayFailed: 0}}
	for _, r := range reports {
		s.Counts[r.Outcome]++
		s.Tokens.Recorded += r.Recorded.Tokens.Prompt + r.Recorded.Tokens.Completion
		s.Tokens.Replay += r.Replay.Tokens.Prompt + r.Replay.Tokens.Completion
	}
	return s
}

// printReplay shows one replay: the recorded run and the replay side by
// side, then both answers.
func (c *cli) printReplay(r *replayJSON) {
	w := c.stdout
	fmt.Fprintf(w, "replay of run %s (hook %s): %s\n", r.Run, r.Hook, r.Outcome)
	if r.PromptChanged {
		fmt.Fprintln(w, "prompt: changed (rendered again from the recorded context with the hook as it is now)")
	} else {
		fmt.Fprintln(w, "prompt: the same as recorded")
	}
	for _, where := range r.Redacted {
		fmt.Fprintf(w, "redacted in the recorded context: %s (the model saw [REDACTED:NAME] there, not the value)\n", where)
	}
	t := newTable(3, 5)
	t.row("", "RECORDED", "REPLAY")
	t.row("status", sideStatus(r.Recorded), sideStatus(r.Replay))
	t.row("model", orDash(r.Recorded.Model), orDash(r.Replay.Model))
	t.row("tokens", tokensText(r.Recorded.Tokens), tokensText(r.Replay.Tokens))
	t.row("tool calls", toolsText(r.Recorded.Tools), toolsText(r.Replay.Tools))
	fmt.Fprintln(w)
	if err := c.layout(t, nil).write(w); err != nil {
		return
	}
	for _, u := range r.NotRecorded {
		fmt.Fprintf(w, "not recorded: %s %s: the model got a tool error; the replay diverged\n", orDash(u.Tool), engine.OneLine(u.Arguments, 120))
	}
	printAnswer(w, "recorded answer", r.Recorded)
	printAnswer(w, "replay answer", r.Replay)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintln(w, "\nnothing was written to the run history; the replay's tokens count in the spend ledger, tagged replay")
}

func printAnswer(w io.Writer, label string, s replaySideJSON) {
	fmt.Fprintf(w, "\n%s:\n", label)
	text := strings.TrimRight(s.Answer, "\n")
	if text == "" {
		text = "(none)"
		if s.Error != "" {
			text += ": " + s.Error
		}
	}
	for line := range strings.SplitSeq(text, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// printReplaySummary shows many replays, one row each, and the counts.
func (c *cli) printReplaySummary(reports []replayJSON) {
	w := c.stdout
	t := newTable(6, len(reports)+1)
	t.row("RUN", "RECORDED", "OUTCOME", "TOKENS BEFORE", "TOKENS AFTER", "TOOL CALLS")
	s := replaySummaryOf(reports)
	for _, r := range reports {
		t.row(r.Run, sideStatus(r.Recorded), string(r.Outcome), tokensText(r.Recorded.Tokens), tokensText(r.Replay.Tokens),
			fmt.Sprintf("%d → %d", len(r.Recorded.Tools), len(r.Replay.Tools)))
	}
	if err := c.layout(t, nil).write(w); err != nil {
		return
	}
	fmt.Fprintf(w, "\n%d same, %d changed, %d diverged, %d failed; tokens %d before, %d after\n",
		s.Counts[engine.ReplaySame], s.Counts[engine.ReplayChanged], s.Counts[engine.ReplayDiverged], s.Counts[engine.ReplayFailed],
		s.Tokens.Recorded, s.Tokens.Replay)
	fmt.Fprintln(w, "nothing was written to the run history; the replays' tokens count in the spend ledger, tagged replay")
}

func sideStatus(s replaySideJSON) string {
	out := string(s.Status)
	if s.Cause != "" {
		out += " (" + string(s.Cause) + ")"
	}
	return out
}

func tokensText(t engine.Tokens) string {
	if !t.Known {
		return "unknown"
	}
	return fmt.Sprintf("%d in, %d out", t.Prompt, t.Completion)
}

// toolsText is "3: read_file ×2, list_dir".
func toolsText(uses []engine.ToolUse) string {
	if len(uses) == 0 {
		return "0"
	}
	var names []string
	count := map[string]int{}
	for _, u := range uses {
		n := u.Tool
		if n == "" {
			n = u.Name
		}
		if count[n] == 0 {
			names = append(names, n)
		}
		count[n]++
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n
		if count[n] > 1 {
			parts[i] += fmt.Sprintf(" ×%d", count[n])
		}
	}
	return fmt.Sprintf("%d: %s", len(uses), strings.Join(parts, ", "))
}
