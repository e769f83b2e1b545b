package steps

import "testing"

// TestShellDescriptorAttacks performs attacks where data reaches a
// program that runs it as code through a file descriptor: a here-string
// or here-document opened on a numbered descriptor (for the rest of the
// script by exec, or for one command), read back by a shell as its
// standard input (sh <&3, bash 0<&3, through copies: exec 4<&3), by
// path (/dev/fd/3, /proc/self/fd/3), through cat or $(...), and exec
// redirecting the script's own standard input.
func TestShellDescriptorAttacks(t *testing.T) {
	t.Parallel()
	v := "touch MARK"
	runStreamAttacks(t, []streamAttack{
		{"sh <&3", "exec 3<<< {{event.v}}; sh <&3", v, "sh reads its standard input from descriptor 3 (line 1)"},
		{"bash 0<&3", "exec 3<<< {{event.v}}; bash 0<&3", v, "reads its standard input from descriptor 3"},
		{"a copy of the descriptor", "exec 3<<< {{event.v}}; exec 4<&3; sh <&4", v, "descriptor 4"},
		{"a here-document", "exec 3<<EOF\n{{event.v}}\nEOF\ncommand sh <&3", v, "descriptor 3 (line 4)"},
		{"a group", "exec 3<<< {{event.v}}; { sh; } <&3", v, "descriptor 3"},
		{"for one command", "sh 3<<< {{event.v}} <&3", v, "is fed to sh"},
		{"a descriptor in a variable", "exec {fd}<<< {{event.v}}; sh <&\"$fd\"", v, "descriptor $"},
		{"sh /dev/fd/3", "exec 3<<< {{event.v}}; sh /dev/fd/3", v, "/dev/fd/3 names an open descriptor by path"},
		{"source /dev/fd/3", "exec 3<<< {{event.v}}; source /dev/fd/3", v, "/dev/fd/3 names an open descriptor"},
		{". /proc/self/fd/3", "exec 3<<< {{event.v}}; . /proc/self/fd/3", v, "/proc/self/fd/3 names an open descriptor"},
		{"/dev/fd/$fd", "exec {fd}<<< {{event.v}}; source /dev/fd/$fd", v, "/dev/fd/$ names an open descriptor"},
		{"cat <&3 | sh", "exec 3<<< {{event.v}}; cat <&3 | sh", v, "is piped into sh"},
		{"assigned from the descriptor", "exec 3<<< {{event.v}}; x=$(cat <&3); eval \"$x\"", v, "is an argument of eval"},
		{"an inner shell", "exec 3<<< {{event.v}}; bash -c 'sh <&3'", v, "in the script of an inner shell: sh reads its standard input from descriptor 3"},
		{"exec <<<", "exec <<< {{event.v}}; sh", v, "exec redirects the script's standard input (line 1)"},
		{"exec 0<&3", "exec 3<<< {{event.v}}; exec 0<&3; bash", v, "exec redirects the script's standard input"},
		{"exec then $(cat)", "exec <<< {{event.v}}; x=$(cat); eval \"$x\"", v, "exec redirects the script's standard input"},
	})
}
