package notify

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestDiscordMarkdownEscaped performs a phishing and mention injection
// through a model's answer (which event data can steer): an answer holding
// a disguised link, @everyone, a user mention and formatting reaches a
// Discord receiver (a real loopback server) escaped in the embed and in
// the content, and the message allows no mention at all
// (allowed_mentions: {"parse": []}), so nothing in it pings anyone.
func TestDiscordMarkdownEscaped(t *testing.T) {
	rec := newReceiver(t)
	n, _, _ := newTest(t, Options{Targets: []engine.NotifyTarget{
		{URL: rec.srv.URL, Format: engine.NotifyDiscord, On: []string{"completed"}},
		{URL: rec.srv.URL + "/templated", Format: engine.NotifyDiscord, On: []string{"completed"}, Template: "{{answer}}"},
	}})
	answer := "@everyone [approve](https://evil.example/login) the **deploy** <@80351110224678912>\n# now\n> quoted"
	n.Observe(runEvent(&engine.Run{ID: "r4", Hook: "h", Status: engine.StatusCompleted, Trigger: "event", Response: answer}))
	for range 2 {
		body := rec.wait(t)
		var m struct {
			Content string `json:"content"`
			Embeds  []struct {
				Title       string `json:"title"`
				Description string `json:"description"`
			} `json:"embeds"`
			AllowedMentions *struct {
				Parse []string `json:"parse"`
			} `json:"allowed_mentions"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		if m.AllowedMentions == nil || m.AllowedMentions.Parse == nil || len(m.AllowedMentions.Parse) != 0 ||
			!bytes.Contains(body, []byte(`"allowed_mentions":{"parse":[]}`)) {
			t.Errorf("allowed_mentions %+v, want {\"parse\": []}:\n%s", m.AllowedMentions, body)
		}
		if len(m.Embeds) != 1 {
			t.Fatalf("%d embeds:\n%s", len(m.Embeds), body)
		}
		desc := m.Embeds[0].Description
		want := `\@everyone \[approve\](https://evil.example/login) the \*\*deploy\*\* \<\@80351110224678912>`
		if !strings.HasPrefix(desc, want) {
			t.Errorf("description %q\nwant it to begin %q", desc, want)
		}
		for _, s := range []string{desc, m.Content, m.Embeds[0].Title} {
			for _, raw := range []string{"[approve](", "@everyone", "**deploy**", "<@8"} {
				if i := strings.Index(s, raw); i >= 0 && (i == 0 || s[i-1] != '\\') {
					t.Errorf("%q holds %q unescaped", s, raw)
				}
			}
		}
	}
}

// TestDiscordEscape: what discordEscape escapes, and where.
func TestDiscordEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text, 3 - 2 = 1 (ok)", "plain text, 3 - 2 = 1 (ok)"},
		{"[x](http://a)", `\[x\](http://a)`},
		{"*a* _b_ ~~c~~ `d` ||e||", `\*a\* \_b\_ \~\~c\~\~ \` + "`" + `d\` + "`" + ` \|\|e\|\|`},
		{`back\slash`, `back\\slash`},
		{"@here <@&123> <#456>", `\@here \<\@&123> \<#456>`},
		{"# h\n  - item\n> q\n-# small", "\\# h\n  \\- item\n\\> q\n\\-# small"},
		{"a # b > c - d", "a # b > c - d"},
	} {
		if got := discordEscape(tt.in); got != tt.want {
			t.Errorf("discordEscape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
