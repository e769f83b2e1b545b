package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
)

// serviceUnit returns the systemd unit docs/service.md ships: the ini
// block under its /etc/systemd/system/hookd.service heading.
func serviceUnit(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/service.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "`/etc/systemd/system/hookd.service`:\n\n```ini\n")
	if !ok {
		t.Fatal("docs/service.md: no ```ini block after `/etc/systemd/system/hookd.service`:")
	}
	unit, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("docs/service.md: the unit's ini block does not end")
	}
	return unit + "\n"
}

// unitValues returns the values of key in unit, in order.
func unitValues(unit, key string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(unit))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), key+"="); ok {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// TestServiceUnit checks the systemd unit of docs/service.md: systemd
// itself finds nothing wrong with it (systemd-analyze verify, which also
// reports unknown keys and values it cannot parse), and it lets hookd's
// sandbox work: the cgroup subtree delegated and writable, mount and
// network namespaces allowed, and the system calls of Landlock, seccomp
// and unshare let through its SystemCallFilter= as the installed systemd
// defines the groups it names.
func TestServiceUnit(t *testing.T) {
	unit := serviceUnit(t)
	for _, bad := range []string{"RestrictNamespaces=yes", "ProtectControlGroups=yes"} {
		if strings.Contains(unit, bad) {
			t.Errorf("the unit sets %s, which switches hookd's sandbox off", bad)
		}
	}
	if v := unitValues(unit, "Delegate"); len(v) != 1 || v[0] != "yes" {
		t.Errorf("Delegate= %q; want one Delegate=yes (hookd makes a cgroup per step under its own)", v)
	}
	if v := unitValues(unit, "ProtectControlGroups"); len(v) != 1 || v[0] != "no" {
		t.Errorf("ProtectControlGroups= %q; want no (the delegated cgroup subtree must be writable)", v)
	}
	if v := unitValues(unit, "RestrictNamespaces"); len(v) != 1 || strings.HasPrefix(v[0], "~") ||
		!strings.Contains(" "+v[0]+" ", " mnt ") || !strings.Contains(" "+v[0]+" ", " net ") || strings.Contains(v[0], "user") {
		t.Errorf("RestrictNamespaces= %q; want an allowlist with mnt and net and without user", v)
	}
	if v := unitValues(unit, "NoNewPrivileges"); len(v) != 1 || v[0] != "yes" {
		t.Errorf("NoNewPrivileges= %q; want yes", v)
	}

	analyze := testtool.Need(t, "systemd-analyze")

	// The calls the sandbox makes, each allowed by the filter.
	allowed := map[string]bool{}
	var add func(name string)
	add = func(name string) {
		if allowed[name] {
			return
		}
		allowed[name] = true
		if !strings.HasPrefix(name, "@") {
			return
		}
		out, err := exec.Command(analyze, "syscall-filter", name).Output()
		if err != nil {
			t.Fatalf("systemd-analyze syscall-filter %s: %v", name, err)
		}
		for _, line := range strings.Split(string(out), "\n")[1:] { // the first line is the group's name
			if f := strings.TrimSpace(line); f != "" && !strings.HasPrefix(f, "#") {
				add(f)
			}
		}
	}
	for _, v := range unitValues(unit, "SystemCallFilter") {
		if strings.HasPrefix(v, "~") {
			t.Fatalf("SystemCallFilter=%s: a deny list here would need the allowed set computed differently", v)
		}
		for _, name := range strings.Fields(v) {
			add(name)
		}
	}
	for _, call := range []string{"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
		"seccomp", "prctl", "unshare", "clone3", "execve"} {
		if !allowed[call] {
			t.Errorf("SystemCallFilter= refuses %s, which hookd's sandbox calls", call)
		}
	}

	// systemd-analyze verify: no findings. ExecStart must name a binary
	// that exists, so the unit is verified with the one under test.
	dir := t.TempDir()
	execStart := regexp.MustCompile(`(?m)^ExecStart=/usr/local/bin/hookd `)
	if !execStart.MatchString(unit) {
		t.Fatal("the unit's ExecStart= does not start /usr/local/bin/hookd")
	}
	path := filepath.Join(dir, "hookd.service")
	if err := os.WriteFile(path, []byte(execStart.ReplaceAllLiteralString(unit, "ExecStart="+hookdBin+" ")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(analyze, "verify", "--man=no", path)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
