package engine

// NotifyTarget is a webhook told about a hook's runs: `notify:` in
// hookd.yaml (every hook) or in a hook file (that hook). Package notify
// delivers the messages; the engine only carries the settings.
type NotifyTarget struct {
	Name   string   // shown in logs instead of the URL; default "FORMAT #N"
	URL    string   // the webhook URL; it may hold a secret and is never logged
	URLEnv string   // or the environment variable that holds the URL
	Format string   // NotifySlack, NotifyDiscord or NotifyGeneric
	On     []string // outcomes reported (Notify* outcomes); default failed
}

// Notification formats.
const (
	NotifyGeneric = "generic" // a JSON object with every field of the message
	NotifySlack   = "slack"   // a Slack incoming-webhook message
	NotifyDiscord = "discord" // a Discord webhook message
)

// Notification outcomes: what a run came to, as a notify target names it
// in on:. skipped covers runs a gate or a short-circuit stopped and runs
// dropped from a full queue.
const (
	OutcomeStarted   = "started"
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeSkipped   = "skipped"
	OutcomeCancelled = "cancelled"
)

// NotifyFormats and NotifyOutcomes list the accepted values, for
// validation and help.
var (
	NotifyFormats  = []string{NotifyGeneric, NotifySlack, NotifyDiscord}
	NotifyOutcomes = []string{OutcomeStarted, OutcomeCompleted, OutcomeFailed, OutcomeSkipped, OutcomeCancelled}
)

// OutcomeOf names the outcome an engine event reports (hook.run.*), or ""
// for any other event.
func OutcomeOf(ev *Event) string {
	switch ev.Type {
	case EventRunStarted:
		return OutcomeStarted
	case EventRunCompleted:
		return OutcomeCompleted
	case EventRunFailed:
		return OutcomeFailed
	case EventRunSkipped:
		return OutcomeSkipped
	case EventRunCancelled:
		return OutcomeCancelled
	}
	return ""
}
