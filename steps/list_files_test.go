package steps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListFilesNewErrors(t *testing.T) {
	newErrTests(t, "list_files", []struct{ name, src, want string }{
		{"bad glob", `include: ["["]`, "include[0]: pattern"},
		{"bad ignore", `ignore: ["a/../b"]`, "ignore[0]"},
		{"bad extension", `extensions: ["*.md"]`, "extensions[0]"},
		{"negative max", `max_files: -1`, "max_files: must be > 0"},
		{"placeholder root", `roots: ["{{event.x}}"]`, "roots[0]"},
		{"unknown", `recursiv: true`, "recursiv"},
	})
}

func TestListFiles(t *testing.T) {
	base := realDir(t, t.TempDir())
	dir := filepath.Join(base, "hook")
	writeFiles(t, dir, map[string]string{
		"README.md":           "readme",
		"main.go":             "package main",
		".env":                "SECRET=1",
		".git/config":         "[core]",
		"docs/guide.md":       "guide",
		"docs/img/logo.PNG":   "png",
		"docs/.hidden.md":     "hidden",
		"node_modules/x/y.js": "js",
		"src/a.go":            "a",
		"src/a_test.go":       "t",
		"src/deep/b.go":       "b",
	})
	writeFiles(t, base, map[string]string{"outside/secret.md": "secret", "shared/s.md": "shared"})
	if err := os.Symlink(filepath.Join(base, "outside", "secret.md"), filepath.Join(dir, "docs", "link-out.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("guide.md", filepath.Join(dir, "docs", "link-in.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(dir, "dirlink")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src string
		event     map[string]any
		want      []string
		wantTrunc bool
		wantErr   string
	}{
		{name: "top level", src: "path: .", want: []string{"README.md", "main.go"}},
		{name: "recursive", src: "recursive: true", want: []string{"README.md", "docs/guide.md", "docs/img/logo.PNG", "docs/link-in.md", "main.go",
			"node_modules/x/y.js", "src/a.go", "src/a_test.go", "src/deep/b.go"}},
		{name: "hidden", src: "hidden: true\nrecursive: true\nignore: ['**/.git/**', node_modules, src/]", want: []string{".env", "README.md", "docs/.hidden.md",
			"docs/guide.md", "docs/img/logo.PNG", "docs/link-in.md", "main.go"}},
		{name: "extensions", src: "recursive: true\nextensions: [md, .png]", want: []string{"README.md", "docs/guide.md", "docs/img/logo.PNG", "docs/link-in.md"}},
		{name: "include", src: "recursive: true\ninclude: ['src/**/*.go']\nignore: ['*_test.go']", want: []string{"src/a.go", "src/deep/b.go"}},
		{name: "subdir", src: "path: src\nrecursive: true\ninclude: ['deep/*.go']", want: []string{"src/deep/b.go"}},
		{name: "path from event", src: "path: '{{event.d}}'", event: map[string]any{"d": "docs"}, want: []string{"docs/guide.md", "docs/link-in.md"}},
		{name: "max_files", src: "recursive: true\nmax_files: 2", want: []string{"README.md", "docs/guide.md"}, wantTrunc: true},
		{name: "extra root", src: "path: ../shared\nroots: [../shared]", want: []string{filepath.Join(base, "shared", "s.md")}},
		{name: "dotdot", src: "path: ..", wantErr: "leaves the hook's workdir"},
		{name: "dotdot from event", src: "path: '{{event.d}}'", event: map[string]any{"d": "../outside"}, wantErr: "leaves"},
		{name: "link out", src: "path: dirlink", wantErr: "outside the hook's workdir"},
		{name: "a file", src: "path: main.go", wantErr: "not a directory"},
		{name: "missing", src: "path: nope", wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustStep(t, "list_files", tt.src, 0)
			env := stepEnv(t, tt.event)
			env.Workdir = dir
			res, err := runStep(t, s, env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v; want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			files := res.Fields["files"].([]any)
			var got []string
			for _, f := range files {
				m := f.(map[string]any)
				got = append(got, m["path"].(string))
				if _, ok := m["size"].(int64); !ok || m["mtime"] == "" {
					t.Errorf("entry %v", m)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("files\n%q\nwant\n%q", got, tt.want)
			}
			if field(res, "count") != len(tt.want) || field(res, "truncated") != tt.wantTrunc {
				t.Errorf("count %v truncated %v", field(res, "count"), field(res, "truncated"))
			}
			wantOut := ""
			if len(tt.want) > 0 {
				wantOut = strings.Join(tt.want, "\n") + "\n"
			}
			if res.Output != wantOut {
				t.Errorf("output %q", res.Output)
			}
		})
	}
}

func TestFileStepsCancelled(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a/b.txt": "b", "c.txt": "c"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for kind, src := range map[string]string{"list_files": "recursive: true", "read_file": "path: c.txt"} {
		s := mustStep(t, kind, src, 0)
		env := stepEnv(t, nil)
		env.Workdir = dir
		res, err := s.Run(ctx, env)
		if !errors.Is(err, context.Canceled) || res.Error == "" {
			t.Errorf("%s: err %v", kind, err)
		}
	}
}
