package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
)

// Message is what a notification says about one run.
type Message struct {
	Hook       string       `json:"hook"`
	RunID      string       `json:"run_id"`
	Trigger    string       `json:"trigger"`
	EventType  string       `json:"event_type,omitempty"` // the event that fired the run, if any
	Outcome    string       `json:"outcome"`              // started, completed, failed, skipped, cancelled, check_failed
	Status     string       `json:"status"`               // the run's status
	Headline   string       `json:"headline"`             // the status as a person reads it: "completed, model not needed"
	Cause      engine.Cause `json:"cause,omitempty"`      // what ended the run: short_circuit, step_failed, timeout, ...
	Gate       string       `json:"gate,omitempty"`       // the gate that refused a skipped run
	StepErrors int          `json:"step_errors,omitempty"`
	Truncated  bool         `json:"truncated,omitempty"` // the model's answer was cut by its output limit
	// CheckFailed is the check step the run did not pass (outcome
	// check_failed).
	CheckFailed string        `json:"check_failed,omitempty"`
	Reason      string        `json:"reason,omitempty"`
	Attempt     int           `json:"attempt,omitempty"`  // of a hook with retry: this run's attempt (1 for the first)
	Attempts    int           `json:"attempts,omitempty"` // and how many the policy allows
	RetryOf     string        `json:"retry_of,omitempty"` // the first run of the chain, for a retry
	Error       string        `json:"error,omitempty"`
	Duration    time.Duration `json:"-"`
	Tools       []toolLine    `json:"tools"`   // the tool chain of the model stage, in order
	Summary     string        `json:"summary"` // a short summary of the model's answer, or of the error or reason
	Time        time.Time     `json:"time"`
	// Custom is the target's template rendered (template:), the text of
	// the message instead of the default; "" without one.
	Custom string `json:"-"`

	run *engine.Run // what templates render from (redacted, like the rest)
}

// toolLine is one tool call of the chain a message shows.
type toolLine struct {
	Tool    string             `json:"tool"`
	Outcome engine.ToolOutcome `json:"outcome"`
}

// summaryLen bounds Message.Summary.
const summaryLen = 300

// messageFrom builds the message of a run event from the run it carries.
func messageFrom(ev *engine.Event) *Message {
	run := ev.Outcome.Run
	m := &Message{
		Hook: run.Hook, RunID: run.ID, Trigger: run.Trigger, EventType: run.EventType, Outcome: engine.OutcomeOf(ev),
		Status: string(run.Status), Headline: run.Headline(), Cause: run.Cause, Gate: run.Gate,
		StepErrors: run.StepErrors(), Truncated: run.Truncated, CheckFailed: run.CheckFailed, Reason: run.Reason, Error: run.Error,
		Attempt: run.Attempt, Attempts: run.Attempts, RetryOf: run.RetryOf,
		Duration: run.Duration(), Tools: make([]toolLine, len(run.Tools)), Time: ev.Time, run: run,
	}
	for i := range run.Tools {
		m.Tools[i] = toolLine{Tool: run.Tools[i].Label(), Outcome: run.Tools[i].Outcome}
	}
	switch {
	case m.Error != "":
		m.Summary = m.Error
	case run.Response != "":
		m.Summary = run.Response
	default:
		m.Summary = m.Reason
	}
	m.Summary = shorten(m.Summary, summaryLen)
	return m
}

// shorten folds whitespace and cuts s to n bytes at a rune boundary.
func shorten(s string, n int) string {
	return cutText(strings.Join(strings.Fields(s), " "), n)
}

// cutText cuts s to n bytes at a rune boundary, "…" marking the cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// chain renders the tool chain: "read_file → list_files (error)".
func (m *Message) chain() string {
	parts := make([]string, len(m.Tools))
	for i, u := range m.Tools {
		parts[i] = u.Tool
		if u.Outcome != engine.ToolOK {
			parts[i] += " (" + string(u.Outcome) + ")"
		}
	}
	return strings.Join(parts, " → ")
}

// title is the one-line headline: "hookd: nightly failed (schedule,
// 1.2s)", "hookd: tests completed, model not needed (schedule, 80ms)".
func (m *Message) title() string {
	s := fmt.Sprintf("hookd: %s %s (%s", m.Hook, m.Headline, m.Trigger)
	if m.Duration > 0 {
		s += ", " + m.Duration.Round(time.Millisecond).String()
	}
	return s + ")"
}

// body renders the message for the given format.
func (m *Message) body(format string) ([]byte, error) {
	switch format {
	case engine.NotifySlack:
		return json.Marshal(m.slack())
	case engine.NotifyDiscord:
		return json.Marshal(m.discord())
	}
	return json.Marshal(m.generic())
}

type genericBody struct {
	*Message
	DurationMS int64  `json:"duration_ms"`
	Text       string `json:"text"`
}

func (m *Message) generic() genericBody {
	return genericBody{Message: m, DurationMS: m.Duration.Milliseconds(), Text: m.text()}
}

// render expands a notification template over the run: the
// engine.NotifyRoots and its steps' results, with filters.
func (m *Message) render(tmpl string) (string, error) {
	scope := &engine.Scope{Hook: m.Hook, RunID: m.RunID, Trigger: m.Trigger, StepNames: map[string]int{}}
	if m.run != nil {
		for _, st := range m.run.Steps {
			if st.Index >= len(scope.Steps) {
				scope.Steps = append(scope.Steps, make([]*engine.StepResult, st.Index+1-len(scope.Steps))...)
			}
			scope.Steps[st.Index] = st
			if st.Name != "" {
				scope.StepNames[st.Name] = st.Index
			}
		}
	}
	answer := ""
	if m.run != nil {
		answer = m.run.Response
	}
	scope.Values = map[string]any{
		"status": m.Status, "outcome": m.Outcome, "headline": m.Headline, "reason": m.Reason, "error": m.Error,
		"answer": answer, "cause": string(m.Cause), "attempt": m.Attempt, "duration": m.Duration.Round(time.Millisecond).String(),
	}
	return engine.Expand(tmpl, scope, nil)
}

// text is the plain-text rendering shared by the chat formats: the
// template's, or the default.
func (m *Message) text() string {
	if m.Custom != "" {
		return m.Custom
	}
	var b strings.Builder
	b.WriteString(m.title())
	fmt.Fprintf(&b, "\nrun %s", m.RunID)
	if m.EventType != "" {
		fmt.Fprintf(&b, ", event %s", m.EventType)
	}
	if c := m.chain(); c != "" {
		fmt.Fprintf(&b, "\ntools: %s", c)
	}
	if m.Summary != "" {
		fmt.Fprintf(&b, "\n%s", m.Summary)
	}
	return b.String()
}

// slackBody is a Slack incoming-webhook message.
type slackBody struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type   string       `json:"type"`
	Text   *slackText   `json:"text,omitempty"`
	Fields []*slackText `json:"fields,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (m *Message) slack() slackBody {
	md := func(s string) *slackText { return &slackText{Type: "mrkdwn", Text: s} }
	fields := []*slackText{
		md("*Hook*\n" + slackEscape(m.Hook)), md("*Outcome*\n" + m.Outcome),
		md("*Trigger*\n" + slackEscape(orDash(m.Trigger))), md("*Duration*\n" + m.Duration.Round(time.Millisecond).String()),
		md("*Run*\n`" + m.RunID + "`"),
	}
	if c := m.chain(); c != "" {
		fields = append(fields, md("*Tools*\n"+slackEscape(c)))
	}
	blocks := []slackBlock{
		{Type: "section", Text: md("*" + slackEscape(m.title()) + "*")},
		{Type: "section", Fields: fields},
	}
	if m.Custom != "" {
		blocks = append(blocks, slackBlock{Type: "section", Text: md(slackEscape(cutText(m.Custom, 2900)))})
	} else if m.Summary != "" {
		blocks = append(blocks, slackBlock{Type: "section", Text: md(slackEscape(m.Summary))})
	}
	// The top-level text is what Slack shows in notifications: escaped
	// as the blocks are, so an answer's <!channel> mentions no one.
	return slackBody{Text: slackEscape(m.text()), Blocks: blocks}
}

// slackEscape escapes the three characters Slack's mrkdwn gives meaning.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// discordBody is a Discord webhook message.
type discordBody struct {
	Content string         `json:"content"`
	Embeds  []discordEmbed `json:"embeds"`
	// AllowedMentions is always {"parse": []}: the message pings no one,
	// whatever @everyone, @here or <@id> its text holds.
	AllowedMentions discordMentions `json:"allowed_mentions"`
}

type discordMentions struct {
	Parse []string `json:"parse"` // never nil: [] allows no mention
}

type discordEmbed struct {
	Title       string         `json:"title"`
	Description string         `json:"description,omitempty"`
	Color       int            `json:"color"`
	Fields      []discordField `json:"fields"`
	Timestamp   string         `json:"timestamp,omitempty"`
}

type discordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline"`
}

// Discord's embed colours by outcome.
var discordColors = map[string]int{
	engine.OutcomeFailed: 0xD0021B, engine.OutcomeCompleted: 0x2EB67D, engine.OutcomeStarted: 0x4A90E2,
	engine.OutcomeSkipped: 0x9B9B9B, engine.OutcomeCancelled: 0xF5A623,
}

// discord renders the message for a Discord webhook. Every text is
// escaped (discordEscape), so that a model's answer or a template shows as
// written: no disguised link, no formatting, no mention; and the message
// allows no mention, so nothing in it pings anyone.
func (m *Message) discord() discordBody {
	esc := discordEscape
	fields := []discordField{
		{Name: "Hook", Value: esc(m.Hook), Inline: true},
		{Name: "Outcome", Value: esc(m.Outcome), Inline: true},
		{Name: "Trigger", Value: esc(orDash(m.Trigger)), Inline: true},
		{Name: "Duration", Value: m.Duration.Round(time.Millisecond).String(), Inline: true},
		{Name: "Run", Value: esc(m.RunID), Inline: false},
	}
	if c := m.chain(); c != "" {
		fields = append(fields, discordField{Name: "Tools", Value: shorten(esc(c), 1000)})
	}
	desc := esc(m.Summary)
	if m.Custom != "" {
		desc = cutText(esc(m.Custom), 4000)
	}
	title := esc(m.title())
	e := discordEmbed{Title: shorten(title, 250), Description: desc, Color: discordColors[m.Outcome], Fields: fields}
	if !m.Time.IsZero() {
		e.Timestamp = m.Time.UTC().Format(time.RFC3339)
	}
	return discordBody{Content: shorten(title, 1900), Embeds: []discordEmbed{e},
		AllowedMentions: discordMentions{Parse: []string{}}}
}

// discordEscape puts a backslash before what Discord's markdown gives
// meaning, so that s shows as written: \ * _ ~ ` | [ ] < @ anywhere (bold,
// italics, strike-through, code, spoilers, masked links [text](url),
// mentions <@id> and @everyone), and # > - at the start of a line
// (headings, quotes, lists), after any spaces.
func discordEscape(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	lineStart := true
	for _, r := range s {
		switch r {
		case '\\', '*', '_', '~', '`', '|', '[', ']', '<', '@':
			b.WriteByte('\\')
		case '#', '>', '-':
			if lineStart {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
		switch r {
		case '\n':
			lineStart = true
		case ' ', '\t':
		default:
			lineStart = false
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
