package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hook file named with a line break gets an error on one line: the
// name's break is written \n, so the file cannot add a line of its own
// choosing to what validate prints.
func TestErrorFileNameStaysOnOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := "x.yaml\nhookd: all hooks valid\r.yaml"
	if err := os.WriteFile(filepath.Join(dir, name), []byte("name: x\ntrigger: {every: 1m}\nsteps: [{type: shell, command: \"true\"}]\nnope: 1\n"), 0o644); err != nil {
		t.Skipf("this file system refuses a line break in a name: %v", err)
	}
	_, errs := LoadDir(dir, Options{})
	if len(errs) != 1 {
		t.Fatalf("errors: %v, want one", errs)
	}
	text := errs[0].Error()
	if strings.ContainsAny(text, "\n\r") {
		t.Fatalf("error spans lines: %q", text)
	}
	if !strings.Contains(text, `x.yaml\nhookd: all hooks valid\r.yaml:4: nope`) {
		t.Fatalf("error = %q, want the name with \\n and \\r, line 4, field nope", text)
	}
}
