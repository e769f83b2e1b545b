package steps

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern string
		path    string
		isDir   bool
		want    bool
	}{
		{"*.md", "a.md", false, true},
		{"*.md", "docs/deep/a.md", false, true},
		{"*.md", "a.mdx", false, false},
		{"docs/*.md", "docs/a.md", false, true},
		{"docs/*.md", "docs/x/a.md", false, false},
		{"docs/*.md", "other/docs/a.md", false, false},
		{"/a.md", "a.md", false, true},
		{"/a.md", "x/a.md", false, false},
		{"docs/**/*.md", "docs/a.md", false, true},
		{"docs/**/*.md", "docs/x/y/a.md", false, true},
		{"**/*.md", "a.md", false, true},
		{"**/.git/**", ".git/config", false, true},
		{"**/.git/**", "sub/.git/objects/x", false, true},
		{"**/.git/**", ".gitignore", false, false},
		{"build/", "build", true, true},
		{"build/", "build", false, false},
		{"node_modules", "a/node_modules", true, true},
		{"a/**", "a", true, false},
		{"a/**", "a/b", false, true},
		{"?.go", "x.go", false, true},
		{"[ab].go", "c.go", false, false},
		{"**", "anything/at/all", false, true},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", tt.pattern, err)
		}
		if got := g.match(tt.path, tt.isDir); got != tt.want {
			t.Errorf("%q matches %q (dir %v) = %v; want %v", tt.pattern, tt.path, tt.isDir, got, tt.want)
		}
	}
	for _, bad := range []string{"", "/", "a/../b", "a**b", "[", "x/[a"} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) accepted", bad)
		}
	}
	g, _ := compileGlob("**/.git/**")
	if !g.matchDir(".git") || !g.matchDir("a/.git") || g.matchDir("a") {
		t.Error("matchDir of **/.git/**")
	}
}

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

func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{{"**/*.md", "a/b/c.md"}, {"a/**/b/**", "a/x/b/y"}, {"[a-", "x"}, {"/x/", "x"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if len(pattern) > 64 || len(path) > 256 {
			return
		}
		g, err := compileGlob(pattern)
		if err != nil {
			return
		}
		g.match(path, false)
		g.matchDir(path)
	})
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
