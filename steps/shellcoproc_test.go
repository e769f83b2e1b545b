package steps

import "testing"

// TestShellCoprocAttacks performs attacks where data reaches a program
// that runs it as code through a coprocess (bash's coproc, named or
// not, whose command is a shell: what the script writes to
// ${COPROC[1]} is code) or through an output process substitution
// (>(sh)), and where a coprocess's output, holding data, is read back
// as code.
func TestShellCoprocAttacks(t *testing.T) {
	t.Parallel()
	v := "touch MARK"
	write := "\nprintf '%s\\n' {{event.v}} >&\"${COPROC[1]}\"\nexec {COPROC[1]}>&-; wait"
	runStreamAttacks(t, []streamAttack{
		{"coproc sh", "coproc sh" + write, v, "coproc runs sh, which runs as code what the script writes to the coprocess"},
		{"coproc bash -s", "coproc bash -s" + write, v, "coproc runs bash"},
		{"coproc (sh)", "coproc (sh)" + write, v, "coproc runs sh"},
		{"coproc env sh", "coproc env sh" + write, v, "coproc runs sh"},
		{"coproc sh -c 'cat | sh'", "coproc sh -c 'cat | sh'" + write, v, "coproc runs sh -c (its script runs sh)"},
		{"a named coproc", "coproc NAME { bash; }\necho {{event.v}} >&\"${NAME[1]}\"\nexec {NAME[1]}>&-; wait", v, "coproc runs bash"},
		{"through a copy of its descriptor", "coproc sh\nexec 5>&\"${COPROC[1]}\"; echo {{event.v}} >&5\nexec 5>&- {COPROC[1]}>&-; wait", v, "coproc runs sh"},
		{"its output read as code", "coproc cat\necho {{event.v}} >&\"${COPROC[1]}\"\nexec {COPROC[1]}>&-\nsh <&\"${COPROC[0]}\"", v, "sh reads its standard input from descriptor $"},
		{">(sh)", "printf '%s\\n' {{event.v}} > >(sh); wait $!", v, ">(sh) runs as code what is written to it"},
		{"exec 3> >(bash)", "exec 3> >(bash); printf '%s\\n' {{event.v}} >&3; exec 3>&-; wait $!", v, ">(bash) runs as code"},
		{">(cat | sh)", "echo {{event.v}} > >(cat | sh); wait $!", v, ">(sh) runs as code"},
	})
}
