package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// NotifyTarget is a webhook told about a hook's runs: `notify:` in
// hookd.yaml (every hook) or in a hook file (that hook). Package notify
// delivers the messages; the engine only carries the settings.
type NotifyTarget struct {
	Name   string   // shown in logs instead of the URL; default "FORMAT #N"
	URL    string   // the webhook URL; it may hold a secret and is never logged
	URLEnv string   // or the environment variable that holds the URL
	Format string   // NotifySlack, NotifyDiscord or NotifyGeneric
	On     []string // outcomes reported (Notify* outcomes); default failed
	// Template, when set, is the message's text, with placeholders over
	// the run (NotifyRoots, steps) and filters.
	Template string
}

// NotifyRoots are the placeholder roots of a notification template, with
// what they hold; step results are steps.NAME.field and step_N.field.
var NotifyRoots = map[string]string{
	"hook": "the hook's name", "run": "the run id", "trigger": "what fired it",
	"status": "the run's status", "outcome": "started, completed, failed, skipped or cancelled",
	"headline": "the status as hookd runs shows it", "reason": "why it was skipped, cancelled or failed",
	"error": "the run's error", "answer": "the model's answer", "cause": "what ended the run",
	"attempt": "the attempt (a hook with retry:)", "duration": "how long it ran",
}

// CheckNotifyTemplate checks a notification template's placeholders.
// steps are the hook's (nil for a daemon-wide target, where a step
// reference is checked when the message is rendered).
func CheckNotifyTemplate(tmpl string, steps []*StepDef) error {
	phs, err := ParsePlaceholders(tmpl)
	if err != nil {
		return err
	}
	for _, ph := range phs {
		if ph.IsLiteral() {
			continue
		}
		root, _, _ := strings.Cut(ph.Ref, ".")
		switch {
		case NotifyRoots[root] != "":
		case root == "steps" || strings.HasPrefix(root, "step_"):
			if steps != nil {
				if err := checkRef(ph.Ref, steps, len(steps)); err != nil {
					return fmt.Errorf("placeholder {{%s}}: %w", ph.Path, err)
				}
			}
		default:
			names := make([]string, 0, len(NotifyRoots))
			for n := range NotifyRoots {
				names = append(names, n)
			}
			sort.Strings(names)
			return fmt.Errorf("placeholder {{%s}}: unknown root %q in a notification (want %s, steps.NAME or step_N)",
				ph.Path, root, strings.Join(names, ", "))
		}
	}
	return nil
}

// Notification formats.
const (
	NotifyGeneric = "generic" // a JSON object with every field of the message
	NotifySlack   = "slack"   // a Slack incoming-webhook message
	NotifyDiscord = "discord" // a Discord webhook message
)

// Notification outcomes: what a run came to, as a notify target names it
// in on:. skipped covers runs a gate or a short-circuit stopped and runs
// dropped from a full queue. check_failed is a completed run whose check
// did not pass (check.go): targets with on: failed or completed hear of
// it too (OutcomeMatches).
const (
	OutcomeStarted     = "started"
	OutcomeCompleted   = "completed"
	OutcomeFailed      = "failed"
	OutcomeSkipped     = "skipped"
	OutcomeCancelled   = "cancelled"
	OutcomeCheckFailed = "check_failed"
	// OutcomeInvalidFile is a trigger skipped because its hook's file no
	// longer loads (GateInvalidFile): targets with on: skipped or failed
	// hear of it too (OutcomeMatches), so a broken file is not missed.
	OutcomeInvalidFile = "invalid_file"
)

// NotifyFormats and NotifyOutcomes list the accepted values, for
// validation and help.
var (
	NotifyFormats  = []string{NotifyGeneric, NotifySlack, NotifyDiscord}
	NotifyOutcomes = []string{OutcomeStarted, OutcomeCompleted, OutcomeFailed, OutcomeSkipped, OutcomeCancelled, OutcomeCheckFailed, OutcomeInvalidFile}
)

// OutcomeOf names the outcome an engine event reports (hook.run.*), or ""
// for any other event: check_failed for a completed run whose check did
// not pass.
func OutcomeOf(ev *Event) string {
	switch ev.Type {
	case EventRunStarted:
		return OutcomeStarted
	case EventRunCompleted:
		if c, _ := ev.Data["check_failed"].(string); c != "" {
			return OutcomeCheckFailed
		}
		return OutcomeCompleted
	case EventRunFailed:
		return OutcomeFailed
	case EventRunSkipped:
		if g, _ := ev.Data["gate"].(string); g == GateInvalidFile {
			return OutcomeInvalidFile
		}
		return OutcomeSkipped
	case EventRunCancelled:
		return OutcomeCancelled
	}
	return ""
}

// OutcomeMatches reports whether a notify target's on: list takes a run
// of this outcome (OutcomeOf): a check_failed run is also failed (a
// failing check must not go unheard) and completed (it did complete).
func OutcomeMatches(on []string, outcome string) bool {
	if slices.Contains(on, outcome) {
		return true
	}
	switch outcome {
	case OutcomeCheckFailed:
		return slices.Contains(on, OutcomeFailed) || slices.Contains(on, OutcomeCompleted)
	case OutcomeInvalidFile:
		return slices.Contains(on, OutcomeFailed) || slices.Contains(on, OutcomeSkipped)
	}
	return false
}
