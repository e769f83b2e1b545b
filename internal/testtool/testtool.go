// Package testtool lets a test that needs a program hookd does not ship
// (git, bash, python3, make, node, ...) skip where that program is
// missing, with a message naming it and the Debian package that has it,
// and fail instead where the programs are required: CI installs them and
// sets HOOKD_REQUIRE_TOOLS=1, so that none of these tests is skipped
// there unnoticed.
package testtool

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hookd/hookd/sandbox"
)

// RequireEnv names the variable that, set to 1, turns a missing program
// into a test failure.
const RequireEnv = "HOOKD_REQUIRE_TOOLS"

// debianPackage names the package of the programs whose package is not
// named after them.
var debianPackage = map[string]string{"node": "nodejs", "xargs": "findutils", "envsubst": "gettext-base",
	"systemd-analyze": "systemd", "nsenter": "util-linux", "setsid": "util-linux", "unshare": "util-linux"}

// Need returns the path of prog on the PATH. When prog is missing it
// skips t with a message naming prog and its package, or fails t when
// RequireEnv is set to 1.
func Need(t testing.TB, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err == nil {
		return p
	}
	pkg := debianPackage[prog]
	if pkg == "" {
		pkg = prog
	}
	msg := fmt.Sprintf("%s is not installed (Debian package %s): %v", prog, pkg, err)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s; %s=1: the tests that need it must run", msg, RequireEnv)
		return ""
	}
	t.Skip(msg)
	return ""
}

// RequireSandboxEnv names the variable that turns a missing kernel
// sandbox from a skip into a failure; CI sets it (.ci/run): its machines
// have Landlock, namespaces and a writable cgroup tree.
const RequireSandboxEnv = "HOOKD_REQUIRE_SANDBOX"

// Sandbox is what a containment test needs of the machine.
type Sandbox int

const (
	Contained    Sandbox = iota // files and network confined
	CgroupTrees                 // and each process tree in a cgroup
	CgroupLimits                // and memory and pids limits
)

// NeedSandbox skips t, saying what is missing, when st does not give
// what the test needs, or fails it when HOOKD_REQUIRE_SANDBOX is set.
func NeedSandbox(t testing.TB, st sandbox.Status, need Sandbox) {
	t.Helper()
	var missing string
	switch {
	case !st.Contained():
		missing = "files and network cannot be confined here: " + strings.Join(st.Lines(), "; ")
	case need >= CgroupTrees && !st.CgroupsOK:
		missing = "no cgroup delegation here: " + st.Tree
	case need >= CgroupLimits && !st.LimitsOK:
		missing = "limits are not enforceable here: " + st.Limits
	}
	if missing == "" {
		return
	}
	if os.Getenv(RequireSandboxEnv) != "" {
		t.Fatalf("%s (%s is set)", missing, RequireSandboxEnv)
	}
	t.Skip(missing)
}
