package notify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestSlackMentionsEscaped performs a mention injection through a
// model's answer (which event data can steer): an answer holding
// <!channel> and a disguised link reaches a Slack receiver (a real
// loopback server) with < and > escaped in the blocks and in the
// top-level text, which Slack shows in notifications: no @channel, no
// link Slack would render.
func TestSlackMentionsEscaped(t *testing.T) {
	rec := newReceiver(t)
	n, _, _ := newTest(t, Options{
		Targets: []engine.NotifyTarget{{URL: rec.srv.URL, Format: engine.NotifySlack, On: []string{"completed"}}}})
	n.Observe(runEvent(&engine.Run{ID: "r3", Hook: "h", Status: engine.StatusCompleted, Trigger: "event",
		Response: "<!channel> urgent: <https://evil.example/login|re-enter your token> & <@U024BE7LH>"}))
	body := rec.wait(t)
	var m struct {
		Text   string `json:"text"`
		Blocks []struct {
			Text *struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	texts := []string{m.Text}
	for _, b := range m.Blocks {
		if b.Text != nil {
			texts = append(texts, b.Text.Text)
		}
	}
	for _, s := range texts {
		if strings.Contains(s, "<!") || strings.Contains(s, "<http") || strings.Contains(s, "<@") {
			t.Errorf("a Slack text holds the answer's markup unescaped: %q", s)
		}
	}
	if !strings.Contains(m.Text, "&lt;!channel&gt; urgent") {
		t.Errorf("text %q: want the answer, escaped", m.Text)
	}
}
