package steps

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFileNewErrors(t *testing.T) {
	newErrTests(t, "read_file", []struct{ name, src, want string }{
		{"missing path", `max_lines: 3`, "path: required"},
		{"bad placeholder", `path: "{{event"`, "path: unclosed placeholder"},
		{"negative max_lines", "path: a\nmax_lines: -1", "max_lines: must be >= 0"},
		{"negative max_bytes", "path: a\nmax_bytes: -1", "max_bytes: must be > 0"},
		{"placeholder root", "path: a\nroots: ['{{event.dir}}']", "roots[0]: must not hold placeholders"},
		{"empty root", "path: a\nroots: ['']", "roots[0]: must not be empty"},
		{"unknown field", "path: a\nmax_line: 3", "max_line"},
	})
}

func TestReadFile(t *testing.T) {
	dir := realDir(t, t.TempDir())
	writeFiles(t, dir, map[string]string{
		"notes.txt":    "one\ntwo\nthree\nfour\n",
		"noeol.txt":    "a\nb",
		"empty.txt":    "",
		"utf8.txt":     "ééééé",
		"docs/x.md":    "# X\n",
		"bin.dat":      "PK\x00\x01\x02",
		"log/app.log":  "l1\nl2\nl3\nl4\nl5\n",
		"big.txt":      strings.Repeat("0123456789\n", 100),
		"sub/deep.txt": "deep",
	})
	tests := []struct {
		name, src  string
		event      map[string]any
		want       string
		wantLines  int
		wantTrunc  bool
		wantPath   string
		wantSize   int64
		wantBinary bool
	}{
		{name: "whole", src: "path: notes.txt", want: "one\ntwo\nthree\nfour\n", wantLines: 4, wantPath: "notes.txt", wantSize: 19},
		{name: "no final newline", src: "path: noeol.txt", want: "a\nb", wantLines: 2, wantPath: "noeol.txt", wantSize: 3},
		{name: "empty", src: "path: empty.txt", want: "", wantLines: 0, wantPath: "empty.txt"},
		{name: "max_lines", src: "path: notes.txt\nmax_lines: 2", want: "one\ntwo\n[hookd: truncated: the first 2 lines (8 bytes) of 19 bytes]",
			wantLines: 2, wantTrunc: true, wantPath: "notes.txt", wantSize: 19},
		{name: "max_lines not reached", src: "path: notes.txt\nmax_lines: 4", want: "one\ntwo\nthree\nfour\n", wantLines: 4, wantPath: "notes.txt", wantSize: 19},
		{name: "max_bytes", src: "path: notes.txt\nmax_bytes: 6", want: "one\ntw\n[hookd: truncated: the first 2 lines (6 bytes) of 19 bytes]",
			wantLines: 2, wantTrunc: true, wantPath: "notes.txt", wantSize: 19},
		{name: "max_bytes keeps whole runes", src: "path: utf8.txt\nmax_bytes: 5", want: "éé\n[hookd: truncated: the first 1 lines (4 bytes) of 10 bytes]",
			wantLines: 1, wantTrunc: true, wantPath: "utf8.txt", wantSize: 10},
		{name: "tail lines", src: "path: log/app.log\ntail: true\nmax_lines: 2", want: "[hookd: truncated: the last 2 lines (6 bytes) of 15 bytes]\nl4\nl5\n",
			wantLines: 2, wantTrunc: true, wantPath: "log/app.log", wantSize: 15},
		{name: "tail bytes from a line start", src: "path: log/app.log\ntail: true\nmax_bytes: 7", want: "[hookd: truncated: the last 2 lines (6 bytes) of 15 bytes]\nl4\nl5\n",
			wantLines: 2, wantTrunc: true, wantPath: "log/app.log", wantSize: 15},
		{name: "tail whole file", src: "path: log/app.log\ntail: true", want: "l1\nl2\nl3\nl4\nl5\n", wantLines: 5, wantPath: "log/app.log", wantSize: 15},
		{name: "binary", src: "path: bin.dat", want: "[hookd: bin.dat is a binary file of 5 bytes]", wantBinary: true, wantPath: "bin.dat", wantSize: 5},
		{name: "placeholder", src: "path: 'docs/{{event.name}}.md'", event: map[string]any{"name": "x"}, want: "# X\n", wantLines: 1, wantPath: "docs/x.md", wantSize: 4},
		{name: "absolute inside", src: "path: " + filepath.Join(dir, "sub", "deep.txt"), want: "deep", wantLines: 1, wantPath: "sub/deep.txt", wantSize: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustStep(t, "read_file", tt.src, 0)
			env := stepEnv(t, tt.event)
			env.Workdir = dir
			res, err := runStep(t, s, env)
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != tt.want || res.Fields["content"] != tt.want {
				t.Errorf("content %q; want %q", res.Output, tt.want)
			}
			if res.Fields["lines"] != tt.wantLines || field(res, "truncated") != tt.wantTrunc || res.Fields["binary"] != tt.wantBinary {
				t.Errorf("lines %v truncated %v binary %v", res.Fields["lines"], field(res, "truncated"), res.Fields["binary"])
			}
			if res.Fields["path"] != tt.wantPath || res.Fields["size"] != tt.wantSize {
				t.Errorf("path %v size %v; want %s %d", res.Fields["path"], res.Fields["size"], tt.wantPath, tt.wantSize)
			}
		})
	}
}

// TestReadFileConfinement tries to read outside the workdir by path,
// through event data and through links; an extra root allows exactly
// what it names.
func TestReadFileConfinement(t *testing.T) {
	base := realDir(t, t.TempDir())
	hook := filepath.Join(base, "hook")
	writeFiles(t, base, map[string]string{
		"hook/ok.txt":   "ok",
		"shared/s.txt":  "shared",
		"secret/key":    "KEY",
		"hook/dir/x.go": "x",
	})
	if err := os.Symlink("../secret/key", filepath.Join(hook, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "secret"), filepath.Join(hook, "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(hook, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src string
		event     map[string]any
		want      string // content, or "" for an error containing wantErr
		wantErr   string
	}{
		{name: "dotdot", src: "path: ../secret/key", wantErr: "leaves the hook's workdir"},
		{name: "absolute", src: "path: /etc/passwd", wantErr: "outside the hook's workdir"},
		{name: "dotdot from event", src: "path: '{{event.p}}'", event: map[string]any{"p": "../secret/key"}, wantErr: "leaves"},
		{name: "absolute from event", src: "path: 'docs/{{event.p}}'", event: map[string]any{"p": "../../secret/key"}, wantErr: "leaves"},
		{name: "link out", src: "path: link", wantErr: "outside the hook's workdir"},
		{name: "dir link out", src: "path: dirlink/key", wantErr: "outside the hook's workdir"},
		{name: "directory", src: "path: dir", wantErr: "is a directory"},
		{name: "fifo", src: "path: fifo", wantErr: "not a regular file"},
		{name: "missing", src: "path: nope.txt", wantErr: "no such file"},
		{name: "extra root", src: "path: ../shared/s.txt\nroots: [../shared]", want: "shared"},
		{name: "extra root absolute", src: "path: " + filepath.Join(base, "shared", "s.txt") + "\nroots: [" + filepath.Join(base, "shared") + "]", want: "shared"},
		{name: "extra root is not everything", src: "path: ../secret/key\nroots: [../shared]", wantErr: "leaves the hook's workdir and its allowed roots"},
		{name: "missing root", src: "path: ok.txt\nroots: [../nope]", wantErr: `resolve root "../nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustStep(t, "read_file", tt.src, 0)
			env := stepEnv(t, tt.event)
			env.Workdir = hook
			res, err := runStep(t, s, env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v (content %q); want an error containing %q", err, res.Output, tt.wantErr)
				}
				if strings.Contains(res.Output, "KEY") {
					t.Fatal("the secret was read")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != tt.want {
				t.Errorf("content %q; want %q", res.Output, tt.want)
			}
		})
	}
	_, err := Confine(hook, nil, "link")
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Confine(link) = %v", err)
	}
}
