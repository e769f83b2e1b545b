package steps

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
)

// TestShellPositionalIdiom checks that the idiom GitHub and xargs
// recommend, data passed to sh -c as a positional parameter the script
// quotes, loads and keeps hostile values as text under bash and dash.
func TestShellPositionalIdiom(t *testing.T) {
	t.Parallel()
	shells := []string{testtool.Need(t, "bash"), testtool.Need(t, "dash")}
	for _, tmpl := range []string{
		`sh -c 'printf "[%s]\n" "$1"' sh {{event.v}}`,
		`bash -c 'printf "[%s]\n" "$1"' _ {{event.v}}`,
		`sh -c 'for f; do printf "[%s]\n" "$f"; done' sh {{event.v}}`,
		`sh -c 'printf "[%s]\n" "$@"' sh {{event.v}}`,
		`sh -c 'x="$1"; printf "[%s]\n" "$x"' sh {{event.v}}`,
	} {
		for _, v := range []string{"$(touch MARK)", "; touch MARK", "`touch MARK`", "a b *", "x -n"} {
			for _, sh := range shells {
				s, err := newShellStep(t, "command: "+yamlString(tmpl), 0)
				if err != nil {
					t.Fatalf("%q: %v; want it to load", tmpl, err)
				}
				env := stepEnv(t, map[string]any{"v": v})
				c, err := s.(*shellStep).command(env)
				if err != nil {
					t.Fatalf("%q with %q: %v", tmpl, v, err)
				}
				c.Argv[0] = sh
				r := c.Run(context.Background())
				if got, want := r.Stdout, "["+v+"]\n"; got != want || fileExists(filepath.Join(env.Workdir, "MARK")) {
					t.Errorf("%q with %q under %s: printed %q (want %q), MARK made: %v", tmpl, v, sh, got, want, fileExists(filepath.Join(env.Workdir, "MARK")))
				}
			}
		}
	}
	for _, tmpl := range []string{
		`bash -c 'git log -- "$1"' _ {{event.v}}`,
		`sh -c 'cp -- "$1" "$2"' sh {{event.v}} {{event.w}}`,
		`sh -c 'for f; do git add -- "$f"; done' sh {{event.v}}`,
		`printf '%s\n' {{event.v}} | xargs sh -c 'git add -- "$@"' sh`,
		`printf '%s\n' {{event.v}} | xargs -I{} sh -c 'git add -- "$1"' sh {}`,
		`list: [sh, -c, 'git log -- "$1"', sh, "{{event.v}}"]`,
	} {
		src := "command: " + yamlString(tmpl)
		if l, ok := strings.CutPrefix(tmpl, "list: "); ok {
			src = "command: " + l
		}
		if _, err := newShellStep(t, src, 0); err != nil {
			t.Errorf("%q: %v; want it to load", tmpl, err)
		}
	}
}

// TestShellPositionalAttacks performs attacks through data passed to an
// inner shell as a positional parameter that the script misuses: run
// as code (eval, command position, an inner sh -c), split unquoted, or
// in an option position of git (--output=MARK writes a file), directly,
// through a for loop, from xargs and from a read loop.
func TestShellPositionalAttacks(t *testing.T) {
	t.Parallel()
	const put = "put -- before it"
	runLiveAttacks(t, emptyGitRepo, []liveAttack{
		{name: "eval", tmpl: `sh -c 'eval "$1"' sh {{event.v}}`, value: "touch MARK", want: "$1, which holds data from {{event.v}}, is an argument of eval"},
		{name: "command position", tmpl: `sh -c '"$1" MARK' sh {{event.v}}`, value: "touch", want: "is in command position"},
		{name: "inner sh -c", tmpl: `bash -c 'sh -c "$1"' _ {{event.v}}`, value: "touch MARK", want: "is an argument of sh -c"},
		{name: "unquoted", tmpl: `sh -c 'git log $1' sh {{event.v}}`, value: "--output=MARK x", want: put},
		{name: "option", tmpl: `sh -c 'git log "$1"' sh {{event.v}}`, value: "--output=MARK", want: put},
		{name: "option of $2", tmpl: `bash -c 'git log "$2"' _ x {{event.v}}`, value: "--output=MARK", want: put},
		{name: "for over the parameters", tmpl: `sh -c 'for f; do git log "$f"; done' sh {{event.v}}`, value: "--output=MARK", want: put},
		{name: "$@", tmpl: `sh -c 'git log "$@"' sh {{event.v}}`, value: "--output=MARK", want: put},
		{name: "xargs", tmpl: `printf '%s\n' {{event.v}} | xargs sh -c 'git log "$1"' sh`, value: "--output=MARK", want: put},
		{name: "xargs -I", tmpl: `printf '%s\n' {{event.v}} | xargs -I{} sh -c 'git log "$1"' sh {}`, value: "--output=MARK", want: put},
		{name: "read loop", tmpl: `printf '%s\n' {{event.v}} | while read -r f; do sh -c 'git log "$1"' sh "$f"; done`, value: "a.md\n--output=MARK", want: put},
	})
}
