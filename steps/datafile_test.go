package steps

import "testing"

// TestShellDataFileAttacks performs attacks where the script writes data
// to a file and then runs it: as a shell's or python's script, sourced,
// as a command by path, fed to sh's standard input, as awk's program
// file, read into eval, through tee, cp, cat and a loop's output, and in
// an inner shell. Each makes MARK under bash and dash when not refused.
func TestShellDataFileAttacks(t *testing.T) {
	t.Parallel()
	const v = "touch MARK"
	const want = "is written at line"
	none := func(*testing.T, string) {}
	runLiveAttacks(t, none, []liveAttack{
		{name: "here-document then sh", tmpl: "cat > job.sh <<EOF\n{{event.v}}\nEOF\nsh job.sh", value: v, want: "job.sh is written at line 1 with data from {{event.v}} and run at line 4 (the script of sh)"},
		{name: "printf then .", tmpl: "printf '%s\\n' {{event.v}} > f; . ./f", value: v, want: want},
		{name: "source", tmpl: "printf '%s\\n' {{event.v}} > f\nsource ./f", value: v, want: want, bashOnly: true},
		{name: "python3 script", tmpl: "printf '%s\\n' {{event.v}} > f.py; python3 f.py", value: "open('MARK', 'w')", want: "(the script of python3)"},
		{name: "chmod and run", tmpl: "printf '%s\\n' {{event.v}} > f; chmod +x f; ./f", value: v, want: "(as a command)"},
		{name: "bash -x", tmpl: "printf '%s\\n' {{event.v}} > f; bash -x f", value: v, want: want},
		{name: "appended", tmpl: "echo 'set -e' > f; printf '%s\\n' {{event.v}} >> f; sh f", value: v, want: want},
		{name: "tee", tmpl: "printf '%s\\n' {{event.v}} | tee f >/dev/null; sh f", value: v, want: want},
		{name: "cp", tmpl: "printf '%s\\n' {{event.v}} > a; cp a b.sh; sh b.sh", value: v, want: "b.sh is written"},
		{name: "cat into another", tmpl: "printf '%s\\n' {{event.v}} > a; cat a > b.sh; sh ./b.sh", value: v, want: "b.sh is written"},
		{name: "a loop's output", tmpl: "printf '%s\\n' {{event.v}} | while read -r l; do echo \"$l\"; done > f.sh; sh f.sh", value: v, want: want},
		{name: "sh < f", tmpl: "printf '%s\\n' {{event.v}} > f; sh < f", value: v, want: "fed to sh on its standard input"},
		{name: "awk -f", tmpl: "printf '%s\\n' {{event.v}} > f.awk; awk -f f.awk /dev/null", value: `BEGIN{system("touch MARK")}`, want: "(awk -f)"},
		{name: "eval $(cat f)", tmpl: "printf '%s\\n' {{event.v}} > f; eval \"$(cat f)\"", value: v, want: "the output of cat f, a file written with data"},
		{name: "inner shell", tmpl: "printf '%s\\n' {{event.v}} > f; sh -c 'sh f'", value: v, want: "in the script of an inner shell: f is written"},
	})
	// A file written with data and only read, and a script the author
	// wrote run beside data, still load.
	for _, tmpl := range []string{
		"printf '%s\\n' {{event.v}} > out.txt; cat out.txt; wc -l < out.txt",
		"printf '%s\\n' {{event.v}} > out.txt; sh build.sh",
		"echo 'echo hi' > f; sh f; echo {{event.v}}",
		"printf '%s\\n' {{event.v}} > notes.md; python3 render.py -- notes.md",
	} {
		if _, err := newShellStep(t, "command: "+yamlString(tmpl), 0); err != nil {
			t.Errorf("%q: %v; want it to load", tmpl, err)
		}
	}
}
