package sandbox

import (
	"strings"
	"testing"
)

// TestInstall: the process's Sandbox is made once and shared; asking for
// other options than it was made with is an error that says why.
func TestInstall(t *testing.T) {
	old := defaultSB
	defaultSB = nil
	defer func() {
		if defaultSB != nil {
			defaultSB.Close()
		}
		defaultSB = old
	}()
	a, err := Install(Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Install(Options{})
	if err != nil || b != a || Default() != a {
		t.Fatalf("a second Install with the same options: %p %v, want %p", b, err, a)
	}
	if _, err := Install(Options{Off: true}); err == nil || !strings.Contains(err.Error(), "sandbox: off needs a process of its own") {
		t.Errorf("Install with sandbox off in a process whose sandbox is on: %v", err)
	}
}
