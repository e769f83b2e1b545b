package steps

import "testing"

// TestShellRedirectionAlone loads scripts with a statement that is a
// redirection of standard input and no command (< f, bash's $(< f)):
// the check of what a command runs from its input met no command and
// panicked, taking hookd validate and serve down with it.
func TestShellRedirectionAlone(t *testing.T) {
	for _, tmpl := range []string{
		"< /etc/hostname",
		"x=$(< /etc/hostname); echo \"$x\"",
		"echo {{event.v}}; x=$(</etc/hostname); echo \"$x\"",
		"eval \"$(< /dev/null)\"",
		"echo \"$(<<< {{event.v}})\"",
	} {
		if _, err := newShellStep(t, "command: "+yamlString(tmpl), 0); err != nil {
			t.Errorf("%q: %v; want it to load", tmpl, err)
		}
	}
}
