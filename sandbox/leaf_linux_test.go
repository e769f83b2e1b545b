package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLeafForControllers: a hookd alone in a cgroup that could give its
// children a controller but does not — a systemd service with
// Delegate=yes starts so — moves itself into a leaf below it and enables
// the controller; one that shares its cgroup with another process stays
// where it is. hugetlb stands in for memory, pids and cpu, which these
// machines bind to cgroup v1. Shown live: a cgroup holding a process
// cannot enable it (EBUSY).
func TestLeafForControllers(t *testing.T) {
	if os.Getenv("HOOKD_LEAF_CHILD") != "" {
		leafChild()
		return
	}
	sb := New(Options{})
	defer sb.Close()
	need(t, sb, "trees")
	base := filepath.Join(sb.sys.cg.v2base, ownCgroups()[""])
	avail, _ := os.ReadFile(filepath.Join(base, "cgroup.controllers"))
	if !slices.Contains(strings.Fields(string(avail)), "hugetlb") || writeFile(filepath.Join(base, "cgroup.subtree_control"), "+hugetlb") != nil {
		t.Skipf("needs the hugetlb controller free of cgroup v1 and enabled below %s (controllers: %q)", base, avail)
	}
	for _, alone := range []bool{true, false} {
		c := filepath.Join(base, fmt.Sprintf("leaftest-%d-%t", os.Getpid(), alone))
		if err := os.Mkdir(c, 0o755); err != nil {
			t.Fatal(err)
		}
		defer removeTree(c)
		fd, err := unix.Open(c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		into := &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		if !alone {
			other := exec.Command("sleep", "100")
			other.SysProcAttr = into
			if err := other.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { other.Process.Kill(); other.Wait() }()
			// Live: a cgroup that holds a process cannot enable it.
			if writeFile(filepath.Join(c, "cgroup.subtree_control"), "+hugetlb") == nil {
				t.Fatal("hugetlb was enabled in a cgroup holding a process: the test shows nothing")
			}
		}
		child := exec.Command(os.Args[0], "-test.run=^TestLeafForControllers$")
		child.Env = append(os.Environ(), "HOOKD_LEAF_CHILD=1")
		child.SysProcAttr = into
		out, err := child.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		enabled, _ := os.ReadFile(filepath.Join(c, "cgroup.subtree_control"))
		on := slices.Contains(strings.Fields(string(enabled)), "hugetlb")
		self := fmt.Sprintf("/hookd-%d-self\n", child.Process.Pid)
		switch {
		case alone && (!on || !strings.Contains(string(out), self)):
			t.Errorf("alone in its cgroup, hookd did not move into a leaf and enable the controller (subtree_control %q):\n%s", enabled, out)
		case !alone && (on || strings.Contains(string(out), self)):
			t.Errorf("sharing its cgroup, hookd moved or enabled the controller anyway (subtree_control %q):\n%s", enabled, out)
		}
	}
}

// leafChild runs in the child TestLeafForControllers starts: it sets up
// a Sandbox's cgroups with hugetlb among the limits' controllers and
// prints where it ended up.
func leafChild() {
	limitControllers = append(limitControllers, "hugetlb")
	cg, st := newCgroups(Status{})
	fmt.Printf("tree: %s\nlimits: %s\ncgroup: %s\n", st.Tree, st.Limits, ownCgroups()[""])
	if cg != nil {
		cg.close()
	}
}
