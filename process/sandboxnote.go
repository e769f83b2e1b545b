package process

import (
	"strings"

	"github.com/hookd/hookd/sandbox"
)

// sandboxNote explains a failure the sandbox most likely caused: output
// that reports a refused write or read, a refused connection or an
// unreachable network, from a command whose policy closes them. "" when
// the output says none of these. Landlock refuses a write, a read
// outside reads: and a connection to a port not listed alike, with
// EACCES ("Permission denied"): a denial that names a connection is the
// network's, any other the files'.
func sandboxNote(p *sandbox.Policy, out string) string {
	var notes []string
	denied := strings.Contains(out, "Permission denied")
	refusedPort := denied && !p.Network.All && len(p.Network.Ports) > 0 && strings.Contains(strings.ToLower(out), "connect")
	if !p.Network.All && (refusedPort || strings.Contains(out, "Network is unreachable") ||
		strings.Contains(out, "Temporary failure in name resolution") || strings.Contains(out, "Could not resolve host")) {
		notes = append(notes, "hookd: the sandbox gives this command network: "+p.Network.String()+
			" (declare network: true, or a list of TCP ports, on the step or the hook)")
	}
	if denied && !refusedPort || strings.Contains(out, "Read-only file system") {
		w := "the workdir"
		if p.ReadOnlyWorkdir {
			w = "nothing but its TMPDIR"
		}
		note := "hookd: the sandbox lets this command write only " + w + ", its TMPDIR and the paths declared in writes:"
		declare := "declare the path in the step's or the hook's writes:"
		if p.Reads != nil {
			note += ", and read only the workdir, the system's directories and the paths declared in reads:"
			declare = "declare the path in writes: to write it, or in reads: to read it"
		}
		notes = append(notes, note+" (a refused access reads \"Permission denied\"; "+declare+")")
	}
	return strings.Join(notes, "\n")
}

// Containment says what confined a command that ran under policy p, for
// its step's containment field: the sandbox's account ("landlock ABI 7,
// mount namespace, network: none (namespace), cgroup"), or why nothing
// did. "" for a command run without a policy.
func Containment(p *sandbox.Policy, r CommandResult) string {
	switch {
	case r.Containment != "":
		return r.Containment
	case p == nil:
		return ""
	case sandbox.Default().Status().Off:
		return "none (hookd.yaml sandbox: off)"
	}
	return "none (containment unavailable on this machine; see hookd status)"
}
