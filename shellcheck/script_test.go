package shellcheck

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseShellScript(t *testing.T) {
	const (
		u1 = `"${HOOKD_P1}"`
		q1 = `${HOOKD_P1}`
		u2 = `"${HOOKD_P2}"`
		q2 = `${HOOKD_P2}`
	)
	tests := []struct {
		name    string
		in      string
		want    string   // rewritten script
		paths   []string // placeholder paths, in variable order
		wantErr string
	}{
		{name: "no placeholders", in: `echo 'a {b}' "$HOME"`, want: `echo 'a {b}' "$HOME"`},
		{name: "unquoted", in: `echo {{event.x}}`, want: `echo ` + u1, paths: []string{"event.x"}},
		{name: "spaces in braces", in: `echo {{ event.x }}`, want: `echo ` + u1, paths: []string{"event.x"}},
		{name: "glued to a word", in: `echo pre{{event.x}}post`, want: `echo pre` + u1 + `post`},
		{name: "double quotes", in: `echo "pre {{event.x}} post"`, want: `echo "pre ` + q1 + ` post"`},
		{name: "same path once", in: `echo {{event.x}} "{{event.x}}" {{step_0}}`, want: `echo ` + u1 + ` "` + q1 + `" ` + u2, paths: []string{"event.x", "step_0"}},
		{name: "after a closed single quote", in: `echo 'it''s' {{event.x}}`, want: `echo 'it''s' ` + u1},
		{name: "escaped quote is not a quote", in: `echo \' {{event.x}}`, want: `echo \' ` + u1},
		{name: "escaped quote in double quotes", in: `echo "a\"b {{event.x}}"`, want: `echo "a\"b ` + q1 + `"`},
		{name: "single quote inside double quotes", in: `echo "it's {{event.x}}"`, want: `echo "it's ` + q1 + `"`},
		{name: "double quote inside single quotes", in: `echo '"' {{event.x}}`, want: `echo '"' ` + u1},
		{name: "command substitution", in: `echo $(echo {{event.x}})`, want: `echo $(echo ` + u1 + `)`},
		{name: "command substitution in double quotes", in: `echo "$(printf %s {{event.x}}) and {{event.y}}"`, want: `echo "$(printf %s ` + u1 + `) and ` + q2 + `"`},
		{name: "quotes inside substitution in double quotes", in: `echo "$(echo "in {{event.x}}")"`, want: `echo "$(echo "in ` + q1 + `")"`},
		{name: "subshell parens", in: `echo "$( (echo a) ; echo {{event.x}})"`, want: `echo "$( (echo a) ; echo ` + u1 + `)"`},
		{name: "case inside substitution", in: "echo \"$(case a in a) echo {{event.x}};; esac) {{event.y}}\"", want: "echo \"$(case a in a) echo " + u1 + ";; esac) " + q2 + "\""},
		{name: "word case is not a keyword", in: `echo "$(echo case) {{event.x}}"`, want: `echo "$(echo case) ` + q1 + `"`},
		{name: "param default unquoted", in: `echo ${X:-{{event.x}}}`, want: `echo ${X:-` + u1 + `}`},
		{name: "param default in double quotes", in: `echo "${X:-{{event.x}}}"`, want: `echo "${X:-` + q1 + `}"`},
		{name: "comment with quote", in: "# don't\necho {{event.x}}", want: "# don't\necho " + u1},
		{name: "hash inside a word", in: `echo a#'b' {{event.x}}`, want: `echo a#'b' ` + u1},
		{name: "heredoc", in: "cat <<EOF\nit's {{event.x}}\nEOF\necho {{event.y}}", want: "cat <<EOF\nit's " + q1 + "\nEOF\necho " + u2},
		{name: "heredoc strip tabs", in: "cat <<-END\n\t{{event.x}}\n\tEND\necho '{x}'", want: "cat <<-END\n\t" + q1 + "\n\tEND\necho '{x}'"},
		{name: "two heredocs", in: "cat <<A <<'B'\n{{event.x}}\nA\nlit\nB\necho {{event.y}}", want: "cat <<A <<'B'\n" + q1 + "\nA\nlit\nB\necho " + u2},
		{name: "here-string", in: `cat <<< {{event.x}}`, want: `cat <<< ` + u1},
		{name: "escaped backslash before placeholder", in: `echo \\{{event.x}}`, want: `echo \\` + u1},
		{name: "ansi quote closed", in: `echo $'a\'b' {{event.x}}`, want: `echo $'a\'b' ` + u1},
		{name: "arith without placeholder", in: `echo $((1+2)) {{event.x}}`, want: `echo $((1+2)) ` + u1},
		{name: "backquotes without placeholder", in: "echo `date` {{event.x}}", want: "echo `date` " + u1},

		{name: "single quotes", in: `echo '{{event.x}}'`, wantErr: "placeholder {{event.x}} inside single quotes would not be expanded; remove the quotes"},
		{name: "single quotes after text", in: `echo 'a {{event.x}} b'`, wantErr: "inside single quotes"},
		{name: "single quotes in unquoted param", in: `echo ${X:-'{{event.x}}'}`, wantErr: "inside single quotes"},
		{name: "ansi quotes", in: `echo $'{{event.x}}'`, wantErr: "inside $'...'"},
		{name: "quoted heredoc", in: "cat <<'EOF'\n{{event.x}}\nEOF", wantErr: "quoted delimiter"},
		{name: "backslash-quoted heredoc", in: "cat <<\\EOF\n{{event.x}}\nEOF", wantErr: "quoted delimiter"},
		{name: "arithmetic", in: `echo $(( {{event.x}} + 1 ))`, wantErr: "arithmetic"},
		{name: "substitution in arithmetic", in: `echo $(( $(echo {{event.x}}) + 1 ))`, wantErr: "arithmetic"},
		{name: "backquotes", in: "echo `echo {{event.x}}`", wantErr: "use $(...)"},
		{name: "after dollar", in: `echo ${{event.x}}`, wantErr: "right after '$'"},
		{name: "after dollar in double quotes", in: `echo "${{event.x}}"`, wantErr: "right after '$'"},
		{name: "after backslash", in: `echo \{{event.x}}`, wantErr: "right after a backslash"},
		{name: "heredoc delimiter", in: "cat <<{{event.x}}\nx\n", wantErr: "expansions not allowed in heredoc words"},
		{name: "unterminated single", in: `echo 'abc {{event.x}}`, wantErr: "without closing quote `'`"},
		{name: "unterminated double", in: `echo "abc`, wantErr: "without closing quote `\"`"},
		{name: "unterminated substitution", in: `echo $(echo`, wantErr: "without matching `$(` with `)`"},
		{name: "unterminated param", in: `echo ${X`, wantErr: "without matching `${` with `}`"},
		{name: "bad placeholder", in: `echo {{event x}}`, wantErr: "invalid character"},
		{name: "unclosed placeholder", in: `echo {{event.x`, wantErr: "unclosed placeholder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.in, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v; want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if s.text != tt.want {
				t.Errorf("text\n%s\nwant\n%s", s.text, tt.want)
			}
			if tt.paths != nil && strings.Join(s.paths, ",") != strings.Join(tt.paths, ",") {
				t.Errorf("paths %q; want %q", s.paths, tt.paths)
			}
		})
	}
}

// FuzzParseShellScript checks that the checker never panics or hangs,
// that every placeholder is gone from a script it accepts, and that the
// script it returns (quotes added, continuations joined) still parses.
func FuzzParseShellScript(f *testing.F) {
	for _, s := range []string{
		`echo {{event.x}}`, `echo "{{a}}" '{{b}}'`, "cat <<E\n{{x}}\nE", `$(( {{x}} ))`,
		"`{{x}}`", `${X:-{{y}}}`, `\{{x}}`, `$'{{x}}'`, "# {{x}}\n{{y}}", `case a in a) {{x}};; esac`,
		"a={{x}}; echo $((a))", "sudo -u r sh -c 'eval \"$V\"'", "echo $\\\n(( {{x}} ))", "timeout 5 git log -- {{x}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in, map[string]bool{"V": true})
		if err != nil {
			return
		}
		for _, p := range s.paths {
			if strings.Contains(s.text, "{{"+p+"}}") {
				t.Fatalf("placeholder {{%s}} left in %q", p, s.text)
			}
		}
		if _, err := parseBash(s.text); err != nil {
			t.Fatalf("%q became %q, which does not parse: %v", in, s.text, err)
		}
	})
}

// TestParseShellScriptConcurrent: loading checks scripts on several
// goroutines at once, which share the pooled bash parsers; each script
// checked concurrently comes out as it does alone (run with -race).
func TestParseShellScriptConcurrent(t *testing.T) {
	scripts := []string{
		"printf 'service %s (%s) at %s\\n' svc7 {{event.env}} {{now}}\nsystemctl status \"svc7\" 2>&1 | head -n 20\n", // bench's hook
		"grep -c {{event.word}} {{event.file}} | tee out.txt",
		"for f in {{event.files}}; do echo \"$f\"; done",
		"cat <<EOF\nhello {{event.name}}\nEOF",
		"x={{event.x}}\necho \"$x\" \\\n  && true",
		"printf '%s\\n' {{event.a}} {{event.b}} | sort",
		strings.Repeat("echo a; grep -c x {{event.a}}\n", 12), // past searchOccs commands
	}
	refused := []string{
		"sh -c 'eval \"$1\"' sh {{event.arg}}",
		"eval {{event.code}}",
		"x={{event.x}}; sh -c \"$x\"",
		"echo {{event.x}} | bash",
		strings.Repeat("echo a | cat\n", 12) + "x={{event.x}}\necho \"$x\" | sh",
	}
	want := make([]string, len(scripts))
	for i, src := range scripts {
		s, err := Parse(src, nil)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		want[i] = s.text
	}
	wantErr := make([]string, len(refused))
	for i, src := range refused {
		_, err := Parse(src, nil)
		if err == nil {
			t.Fatalf("%q was accepted", src)
		}
		wantErr[i] = err.Error()
	}
	const workers, rounds = 4, 200
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for r := range rounds {
				i := (w + r) % len(scripts)
				s, err := Parse(scripts[i], nil)
				if err != nil {
					errs <- fmt.Errorf("%q: %w", scripts[i], err)
					return
				}
				if s.text != want[i] {
					errs <- fmt.Errorf("%q: text %q; want %q", scripts[i], s.text, want[i])
					return
				}
				j := (w + r) % len(refused)
				if _, err := Parse(refused[j], nil); err == nil || err.Error() != wantErr[j] {
					errs <- fmt.Errorf("%q: %v; want %s", refused[j], err, wantErr[j])
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
