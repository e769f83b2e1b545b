package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestServeCreatesDefaultHooksDir: a project without hooks.d starts (as
// Thinkroid made its extensions directory): hookd serve creates the
// default hooks directory, mode 0755 under a umask of 077, and logs it.
// A process, for a umask of its own.
func TestServeCreatesDefaultHooksDir(t *testing.T) {
	e := newProcEnv(t, "", nil)
	if err := os.Remove(e.path("hooks.d")); err != nil {
		t.Fatal(err)
	}
	d := e.startProcess(exec.Command("sh", "-c", `umask 077 && exec "$0" serve`, hookdBin))
	d.waitLog("hookd serving")
	if !strings.Contains(d.log.String(), "created the hooks directory") {
		t.Errorf("the log does not say the hooks directory was created:\n%s", d.log)
	}
	fi, err := os.Stat(e.path("hooks.d"))
	if err != nil {
		t.Fatalf("hooks.d was not created: %v\n%s", err, d.log)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Errorf("hooks.d: %v, want a directory with mode 0755", fi.Mode())
	}
	// A hook written into it now is loaded: the directory is watched.
	e.write("hooks.d/late.yaml", "trigger: {event: late.test}\nsteps: [{shell: 'true'}]\nskip_llm: true\n")
	d.waitLog("hooks reloaded")
	if r := e.must(0, "list"); !strings.Contains(r.stdout, "late") {
		t.Errorf("the hook written into the new hooks.d is not listed:\n%s", r)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("hookd serve exited %d:\n%s", code, d.log)
	}
}

// TestServeNamedHooksDirMissing: a hooks directory named by --hooks or by
// hookd.yaml's hooks_dir that does not exist is not created (a name
// that does not exist is usually a typo): hookd serve refuses to start.
func TestServeNamedHooksDirMissing(t *testing.T) {
	for _, c := range []struct {
		name, settings string
		args           []string
	}{
		{"flag", "", []string{"--hooks", "hoks.d"}},
		{"hookd.yaml", "hooks_dir: hoks.d\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.settings, nil)
			d := e.startServe(c.args...)
			if code := d.wait(); code != exitError {
				t.Fatalf("hookd serve exited %d, want %d:\n%s", code, exitError, d.log)
			}
			if !strings.Contains(d.log.String(), "hoks.d does not exist") {
				t.Errorf("the error does not name the missing directory:\n%s", d.log)
			}
			if e.exists("hoks.d") {
				t.Errorf("hoks.d was created")
			}
		})
	}
}
