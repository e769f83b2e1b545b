package steps

import "testing"

// TestShellHiddenReaderAttacks performs attacks where data is piped
// into a program that runs what it reads as code, hidden from the check
// of a pipe's right side: an alias of a shell, env -S, a command named
// by a variable, find -exec's terminator taken for a script, and awk,
// sed and perl programs that run commands built from their input.
func TestShellHiddenReaderAttacks(t *testing.T) {
	t.Parallel()
	v := "touch MARK"
	runStreamAttacks(t, []streamAttack{
		{"an alias", "alias r=sh\nprintf '%s\\n' {{event.v}} | r", v, "is piped into r (an alias running sh)"},
		{"env -S", "printf '%s\\n' {{event.v}} | env -S sh", v, "is piped into env -S (its code runs sh)"},
		{"a command in a variable", "s=sh; printf '%s\\n' {{event.v}} | \"$s\"", v, "is piped into a command named by an expansion"},
		{"find -exec sh ;", "printf '%s\\n' {{event.v}} | find . -maxdepth 0 -exec sh \\;", v, "is piped into sh"},
		{"awk system", "printf '%s\\n' {{event.v}} | awk '{system($0)}'", v, "is piped into awk (its program runs commands"},
		{"awk print into sh", "printf '%s\\n' {{event.v}} | awk '{print | \"sh\"}'", v, "is piped into awk"},
		{"sed e", "printf '%s\\n' {{event.v}} | sed e", v, "is piped into sed"},
		{"sed s///e", "printf '%s\\n' {{event.v}} | sed 's/.*/&/e'", v, "is piped into sed"},
		{"perl -n system", "printf '%s\\n' {{event.v}} | perl -ne 'system $_'", v, "is piped into perl"},
	})
	// Programs that only transform what they read still load.
	for _, tmpl := range []string{
		"printf '%s\\n' {{event.v}} | awk '/a|b/ {print $1}'",
		"printf '%s\\n' {{event.v}} | sed 's/e/x/g; s/a/b/'",
		"printf '%s\\n' {{event.v}} | sed -n '/error/p'",
		"printf '%s\\n' {{event.v}} | python3 exec.py",
		"printf '%s\\n' {{event.v}} | find . -name '*.go' -exec grep -l x {} +",
	} {
		if _, err := newShellStep(t, "command: "+yamlString(tmpl), 0); err != nil {
			t.Errorf("%q: %v; want it to load", tmpl, err)
		}
	}
}

// TestShellInputCopyAttacks performs attacks where a code reader's
// standard input reaches it in a way the pipe check took for another
// input: <&0 (a copy of the same input), a redirection of another
// descriptor (3<<< x), and a script given as <(cat), which reads the
// reader's own standard input.
func TestShellInputCopyAttacks(t *testing.T) {
	t.Parallel()
	v := "touch MARK"
	runStreamAttacks(t, []streamAttack{
		{"bash <(cat)", "printf '%s\\n' {{event.v}} | bash <(cat)", v, "is piped into bash (its script comes from <(...)"},
		{"source <(cat)", "printf '%s\\n' {{event.v}} | source <(cat)", v, "is piped into source (its script comes from <(...)"},
		{"sh <&0 in a function", "f() { sh <&0; }; printf '%s\\n' {{event.v}} | f", v, "is piped into f (a function running sh)"},
		{"sh <&0 in a group", "printf '%s\\n' {{event.v}} | { sh <&0; }", v, "is piped into sh"},
		{"another descriptor's here-string", "printf '%s\\n' {{event.v}} | { sh 3<<< x; }", v, "is piped into sh"},
	})
}
