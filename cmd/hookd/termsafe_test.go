package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/textsafe"
	"github.com/hookd/hookd/llm/llmtest"
)

func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text\n\ttab", "plain text\n\ttab"},
		{"\x1b[2J\x1b]0;title\x07", `\u001b[2J\u001b]0;title\u0007`},
		{"a\rb\x7fc", `a\u000db\u007fc`},
		{"\u009b31m", `\u009b31m`},               // C1 CSI, as UTF-8
		{"\x9b31m \xff", `\x9b31m \xff`},         // not UTF-8
		{"abc\u202edcb", `abc\u202edcb`},         // right-to-left override
		{"héllo wörld ✓ 日本", "héllo wörld ✓ 日本"}, // printable runes pass
		{"cut \xe2\x9c", `cut \xe2\x9c`},         // an unfinished rune at the end
		{`{"v":"\u001b"}`, `{"v":"\u001b"}`},     // JSON escapes pass as they are
	} {
		for _, step := range []int{0, 1, 2} {
			var out bytes.Buffer
			w := newTermSafe(&out)
			if step == 0 {
				w.Write([]byte(tc.in))
			} else {
				for b := []byte(tc.in); len(b) > 0; {
					n := min(step, len(b))
					if k, err := w.Write(b[:n]); k != n || err != nil {
						t.Fatalf("Write = %d, %v", k, err)
					}
					b = b[n:]
				}
			}
			w.Close()
			if out.String() != tc.want {
				t.Errorf("%q in writes of %d: got %q; want %q", tc.in, step, out.String(), tc.want)
			}
		}
	}
}

// TestTerminalEscapes: a hostile event value and a hostile model put
// terminal escape sequences (clear the screen, set the window title,
// OSC 52 to set the clipboard, a C1 CSI) in what the CLI prints — a
// step's output and error, the model's answer, the name of a tool it
// made up — and fire --wait, watch, runs, run and search print them
// escaped: no control character reaches the terminal.
func TestTerminalEscapes(t *testing.T) {
	const hostile = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b]0;owned\x07\u009b31mred\r"
	model := llmtest.NewFunc(func(r llmtest.Request) llmtest.Reply {
		msgs := r.Chat.Messages
		if msgs[len(msgs)-1].Role == "tool" {
			return llmtest.Answer("done" + hostile)
		}
		return llmtest.Calls(llmtest.ToolCall{ID: "c1", Name: "read_file" + hostile, Args: `{}`})
	})
	defer model.Close()
	e := newEnv(t, "llm:\n  model: m\n  base_url: "+model.BaseURL()+"\n", map[string]string{
		"ansi.yaml": `steps:
  - name: show
    type: shell
    command: printf '%s\n' {{event.v}}; printf '%s' {{event.v}} >&2; exit 3
skip_llm: true
`,
		"chat.yaml": "prompt: 'hi {{event.v}}'\ntools: [read_file]\n",
	})
	e.serve()
	ev := `{"v":"x\u001b]52;c;cHduZWQ=\u0007\u001b[2J\u009b31m\r"}`
	var outs []result
	fire := e.run("fire", "ansi", "--wait", "--event", ev)
	outs = append(outs, fire, e.run("fire", "chat", "--wait", "--event", ev))
	id := runID(t, fire)
	outs = append(outs, e.run("runs"), e.run("run", id), e.run("run", "chat"), e.run("search", "red"),
		e.run("watch", "--since", "0", "--type", "hook.tool.called,hook.step.finished", "-n", "2"))
	for _, r := range outs {
		for _, s := range []string{r.stdout, r.stderr} {
			if i := strings.IndexFunc(s, textsafe.Escaped); i >= 0 {
				t.Errorf("hookd %s printed a control character %q:\n%s", strings.Join(r.args, " "), s[i:min(i+8, len(s))], s)
			}
		}
	}
	if all := outs[0].String() + outs[1].String() + outs[3].String(); !strings.Contains(all, `\u001b]52;c;`) {
		t.Errorf("the hostile text is not shown escaped:\n%s", all)
	}
}
