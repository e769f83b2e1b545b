package process

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/sandbox"
)

// TestSandboxNote runs commands the sandbox refuses and reads the note
// their result gets: a refused write points to writes:, a read outside
// reads: to reads:, a connection to a port not listed to network:, and
// none of them points to another's remedy.
func TestSandboxNote(t *testing.T) {
	t.Parallel()
	bash := testtool.Need(t, "bash")
	testtool.NeedSandbox(t, sandbox.Default().Status(), testtool.Contained)
	outside := t.TempDir() // neither the workdir nor declared
	if err := os.WriteFile(filepath.Join(outside, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	for _, tc := range []struct {
		name, script string
		policy       func(wd string) *sandbox.Policy
		want, not    []string
	}{
		{"write", "touch " + outside + "/new",
			func(wd string) *sandbox.Policy { return &sandbox.Policy{Workdir: wd} },
			[]string{"write only the workdir", "writes:"}, []string{"reads:", "network:"}},
		{"read", "cat " + outside + "/f",
			func(wd string) *sandbox.Policy { return &sandbox.Policy{Workdir: wd, Reads: []string{}} },
			[]string{"read only the workdir", "in reads: to read it"}, []string{"network:"}},
		{"port", "exec 3<>/dev/tcp/127.0.0.1/" + port,
			func(wd string) *sandbox.Policy {
				return &sandbox.Policy{Workdir: wd, Network: sandbox.Network{Ports: []uint16{1}}}
			},
			[]string{"network: tcp ports 1"}, []string{"writes:", "reads:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			c := &Command{Argv: []string{bash, "-c", tc.script}, Dir: wd, Env: []string{"PATH=/usr/bin:/bin"}, Policy: tc.policy(wd)}
			res := c.Run(context.Background())
			out := res.Stdout + res.Stderr
			if res.ExitCode == 0 {
				t.Fatalf("the sandbox let it through:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the note does not say %q:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("the note points to %q, which would not help:\n%s", n, out)
				}
			}
		})
	}
}
