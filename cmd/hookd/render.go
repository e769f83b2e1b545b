package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/daemon"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/triggers"
)

// cmdRender previews a hook: it runs the steps here, in this process, and
// prints what they gathered, the short-circuit that would apply and the
// prompt that would be sent, without calling a model. It needs no daemon
// and no lock, and records nothing: the store is only read (the previous
// run's time, skip_llm_if_unchanged's fingerprint, steps that read
// hookd's records).
func cmdRender(c *cli, args []string) int {
	fs := c.flags()
	eventJSON := fs.String("event", "", "event payload as a JSON object, visible as {{event}}")
	asJSON := fs.Bool("json", false, "print the previewed run as JSON")
	pos, d, code, ok := c.setup(fs, args, 1, 1)
	if !ok {
		return code
	}
	name := pos[0]
	event, ok := c.jsonObject("event", *eventJSON)
	if !ok {
		return exitUsage
	}
	hooks, errs, err := daemon.LoadHooks(d)
	if err != nil {
		return c.errorf("%v", err)
	}
	if !hasHook(hooks, name) {
		for _, e := range errs {
			fmt.Fprintf(c.stderr, "not loaded: %v\n", c.shortErr(e))
		}
		return c.noHook(name, hookNames(hooks))
	}

	sbStatus, err := daemon.InstallSandbox(d, daemon.NewLogger(d.LogFormat, c.log, slog.LevelWarn))
	if err != nil {
		return c.errorf("%v", err)
	}
	db, done, err := previewStore(d)
	if err != nil {
		return c.errorf("%v", err)
	}
	defer done()
	eng, err := engine.New(engine.Config{
		Store:          readOnlyStore{db},
		Events:         triggers.NewEventIndex(),
		Prompt:         daemon.PromptRenderer(d),
		Logger:         daemon.NewLogger(d.LogFormat, c.log, slog.LevelError),
		DefaultTimeout: d.DefaultTimeout,
		Credentials:    daemon.CredentialEnv(d),
		Manual:         true,
		Sandbox:        &sbStatus,

		CredentialValues: daemon.CredentialValues(d),
	}, hooks)
	if err != nil {
		return c.errorf("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run, err := eng.Preview(ctx, name, event)
	if err != nil {
		return c.errorf("%v", err)
	}
	if *asJSON {
		if code := c.printJSON(run); code != exitOK {
			return code
		}
	} else {
		c.printPreview(run)
	}
	if run.Status == engine.StatusCompleted {
		return exitOK
	}
	return exitError
}

func hasHook(hooks []*engine.Hook, name string) bool {
	for _, h := range hooks {
		if h.Name == name {
			return true
		}
	}
	return false
}

// previewStore opens the database for reading (PostgreSQL's when
// database: names one), or, when there is no SQLite file yet, an empty one
// in a temporary directory that done removes.
func previewStore(d *config.Daemon) (db engine.Store, done func(), err error) {
	if d.Database != "" {
		db, err := daemon.OpenStore(d)
		if err != nil {
			return nil, nil, err
		}
		return db, func() { db.Close() }, nil
	}
	if _, err := os.Stat(d.DB); err == nil {
		db, err := store.Open(d.DB)
		if err != nil {
			return nil, nil, err
		}
		return db, func() { db.Close() }, nil
	}
	dir, err := os.MkdirTemp("", "hookd-render")
	if err != nil {
		return nil, nil, fmt.Errorf("make temporary store: %w", err)
	}
	tmp, err := store.Open(filepath.Join(dir, "hookd.db"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return tmp, func() { tmp.Close(); os.RemoveAll(dir) }, nil
}

// errReadOnly is what a write to the store gives during `hookd render`.
var errReadOnly = errors.New("hookd render: the store is read-only")

// readOnlyStore refuses every write, so a preview cannot record anything
// even by mistake; reads go to the database.
type readOnlyStore struct{ engine.Store }

func (readOnlyStore) SetPaused(context.Context, string, bool) error { return errReadOnly }
func (readOnlyStore) InsertRun(context.Context, *engine.Run) error  { return errReadOnly }
func (readOnlyStore) StartRun(context.Context, *engine.Run) error   { return errReadOnly }
func (readOnlyStore) FinishRun(context.Context, *engine.Run) error  { return errReadOnly }
func (readOnlyStore) NoteRun(context.Context, string, string) error { return errReadOnly }
func (readOnlyStore) UpdateQueued(context.Context, *engine.Run, engine.Merged) error {
	return errReadOnly
}
func (readOnlyStore) AppendEvent(context.Context, *engine.Event) error    { return errReadOnly }
func (readOnlyStore) AppendEvents(context.Context, []*engine.Event) error { return errReadOnly }
func (readOnlyStore) RecoverInterrupted(context.Context, time.Time) ([]*engine.Run, error) {
	return nil, errReadOnly
}
func (readOnlyStore) Follow(context.Context, string, *engine.PendingRetry, *engine.PendingRerun) error {
	return errReadOnly
}

// printPreview prints the steps and the decision on stderr and the prompt
// on stdout, so `hookd render NAME > prompt.md` keeps the prompt alone.
func (c *cli) printPreview(run *engine.Run) {
	w := c.stderr
	fmt.Fprintf(w, "preview of %s (nothing recorded, no model called)\n", run.Hook)
	for _, s := range run.Steps {
		line := fmt.Sprintf("%s %s, %s", stepLabel(s), s.Type, s.Duration.Round(time.Millisecond))
		if s.ExitCode != nil {
			line += fmt.Sprintf(", exit %d", *s.ExitCode)
		}
		if s.TimedOut {
			line += ", timed out"
		}
		if s.Error != "" {
			line += ", error: " + engine.OneLine(s.Error, 120)
		}
		fmt.Fprintln(w, "  "+line)
		if out := strings.TrimSpace(s.Output); out != "" {
			first, _, _ := strings.Cut(out, "\n")
			lines := strings.Count(strings.TrimRight(s.Output, "\n"), "\n") + 1
			fmt.Fprintf(w, "    %s (%d bytes, %d %s)\n", engine.OneLine(first, 100), len(s.Output), lines, plural(lines, "line", "lines"))
		}
	}
	switch {
	case run.Cause == engine.CauseShortCircuit:
		fmt.Fprintf(w, "%s: the model would not be called\n", run.Reason)
	case run.Status == engine.StatusCompleted && run.Reason == engine.PreviewReason:
		fmt.Fprintln(w, "no short-circuit applies: the model would be called with this prompt")
	case run.Status == engine.StatusCompleted:
		fmt.Fprintln(w, "steps only (skip_llm or no prompt): the run would complete without a model")
	default:
		why := run.Error
		if why == "" {
			why = run.Reason
		}
		fmt.Fprintf(w, "the run would end %s: %s\n", run.Status, why)
	}
	if run.Error != "" && run.Status == engine.StatusCompleted {
		fmt.Fprintf(w, "the prompt does not render: %s\n", run.Error)
	}
	if run.Prompt != "" {
		fmt.Fprintln(w, "prompt:")
		fmt.Fprint(c.stdout, run.Prompt)
		if !strings.HasSuffix(run.Prompt, "\n") {
			fmt.Fprintln(c.stdout)
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func stepLabel(s *engine.StepResult) string {
	if s.Name != "" {
		return fmt.Sprintf("step_%d (%s)", s.Index, s.Name)
	}
	return fmt.Sprintf("step_%d", s.Index)
}
