package process

import (
	"strings"

	"github.com/hookd/hookd/sandbox"
)

// sandboxNote explains a failure the sandbox most likely caused: output
// that reports a refused write or an unreachable network, from a command
// whose policy closes them. "" when the output says neither.
func sandboxNote(p *sandbox.Policy, out string) string {
	var notes []string
	if strings.Contains(out, "Permission denied") || strings.Contains(out, "Read-only file system") {
		w := "the workdir"
		if p.ReadOnlyWorkdir {
			w = "nothing but its TMPDIR"
		}
		notes = append(notes, "hookd: the sandbox lets this command write only "+w+
			", its TMPDIR and the paths declared in writes: (a refused write reads \"Permission denied\"; declare the path in the step's or the hook's writes:)")
	}
	if !p.Network.All && (strings.Contains(out, "Network is unreachable") || strings.Contains(out, "Temporary failure in name resolution") ||
		strings.Contains(out, "Could not resolve host") || strings.Contains(out, "Permission denied") && len(p.Network.Ports) > 0) {
		notes = append(notes, "hookd: the sandbox gives this command network: "+p.Network.String()+
			" (declare network: true, or a list of TCP ports, on the step or the hook)")
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
