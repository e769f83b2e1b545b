package templates

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// FuzzRender renders arbitrary prompt text and arbitrary values. Any
// prompt must render or fail without panicking. Then the text is made
// into a template without quotes, '<' or braces of its own around five
// data placeholders, and the rendered instructions are scanned: every
// value must come out whole, in order, inside its own quotes or fence, and
// the text outside them must be the template's.
func FuzzRender(f *testing.F) {
	f.Add("Tests failed: | diff: |\n| event |.", "ok\n", `"; rm -rf ~; echo "`, injection, uint16(0))
	f.Add("{{step_0}} {{event.a}} {{", "DATA 00000000>>>", "x", "", uint16(7))
	f.Add(`{{"{{"}} {{ "}}" }} {{hook}}`, "\xff\xfe", strings.Repeat("é", 40), "<<<DATA 12345678 x\n", uint16(33))
	f.Add("a|b|c|d|e", "", "\"", "\\", uint16(1))
	f.Fuzz(func(t *testing.T, text, a, b, c string, capSel uint16) {
		opt := Options{}
		if capSel > 0 {
			opt = Options{MaxValueBytes: int(capSel % 300), InlineMax: int(capSel % 50)}
		}
		r := New(opt)
		scope := &engine.Scope{
			Hook: "fuzz", RunID: "run-1", Trigger: "event", Now: t0, LastRunTime: last,
			Event: map[string]any{"a": a, "b": b, "n": 42.5, "nested": map[string]any{"c": c}},
			Steps: []*engine.StepResult{
				{Index: 0, Name: "s1", Type: "shell", Output: a, ExitCode: new(1), Fields: map[string]any{"stderr": b}},
				{Index: 1, Name: "s2", Type: "shell", Output: c},
			},
			StepNames: map[string]int{"s1": 0, "s2": 1},
		}
		hook := &engine.Hook{Name: "fuzz", Workdir: "/w", Prompt: text}

		// Arbitrary prompt text: no panic.
		_, _ = r.RenderPrompt(hook, scope)

		// A template of the text's pieces around data placeholders.
		clean := strings.NewReplacer(`"`, "", "<", "", "{", "", "}", "").Replace(text)
		pieces := strings.SplitN(clean, "|", 6)
		for len(pieces) < 6 {
			pieces = append(pieces, " ")
		}
		paths := []string{"step_0", "event.b", "steps.s1.stderr", "steps.s2.output", "event"}
		var tmpl strings.Builder
		for i, p := range paths {
			tmpl.WriteString(pieces[i])
			tmpl.WriteString("{{" + p + "}}")
		}
		tmpl.WriteString(pieces[5])
		tmpl.WriteString(" {{event.n}} {{hook}}")
		hook.Prompt = tmpl.String()

		got, err := r.RenderPrompt(hook, scope)
		if err != nil {
			t.Fatalf("render %q: %v", hook.Prompt, err)
		}
		_, instr, ok := strings.Cut(got, instructionsMark)
		if !ok {
			t.Fatalf("no %q in:\n%s", instructionsMark, got)
		}
		vals, outside, err := scanFences(instr)
		if err != nil {
			t.Fatalf("%v\ntemplate %q\ninstructions:\n%s", err, hook.Prompt, instr)
		}
		var want []string
		for _, p := range paths {
			v, _ := scope.Lookup(p)
			s, _ := capValue(strings.ToValidUTF8(engine.Stringify(v), "\uFFFD"), r.opt.MaxValueBytes)
			want = append(want, s)
		}
		if strings.Join(norm(vals), "\x00") != strings.Join(norm(want), "\x00") {
			t.Fatalf("values out of their fences:\ngot  %q\nwant %q\ninstructions:\n%s", vals, want, instr)
		}
		wantOutside := strings.Join(pieces, "") + "42.5fuzz"
		if squeeze(outside) != squeeze(wantOutside) {
			t.Fatalf("text outside the values:\ngot  %q\nwant %q", squeeze(outside), squeeze(wantOutside))
		}
	})
}

// squeeze drops all white space, which the layout of blocks may change.
func squeeze(s string) string {
	return strings.Join(strings.Fields(s), "")
}
