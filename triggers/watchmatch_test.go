package triggers

import (
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		rel     string
		dir     bool
		want    bool
	}{
		{"*.tmp", "a.tmp", false, true},
		{"*.tmp", "sub/deep/a.tmp", false, true},
		{"*.tmp", "a.tmp.md", false, false},
		{"node_modules", "node_modules/x/y.js", false, true},
		{"node_modules", "src/node_modules/y.js", false, true},
		{".git/", ".git/HEAD", false, true},
		{".git/", "sub/.git/config", false, true},
		{".git/", ".git", true, true},
		{".git/", ".git", false, false}, // a file named .git (a worktree's) is not a folder
		{".git/", "a.git", false, false},
		{"/build", "build/out.js", false, true},
		{"/build", "sub/build/out.js", false, false},
		{"docs/*.md", "docs/a.md", false, true},
		{"docs/*.md", "docs/sub/a.md", false, false},
		{"docs/*.md", "x/docs/a.md", false, false},
		{"**/testdata/**", "testdata/a", false, true},
		{"**/testdata/**", "a/b/testdata/c/d", false, true},
		{"**/testdata/**", "testdatax/a", false, false},
		{"src/**/*.go", "src/a.go", false, true},
		{"src/**/*.go", "src/x/y/a.go", false, true},
		{"src/**/*.go", "lib/a.go", false, false},
		{"a?c", "abc", false, true},
		{"[ab]*", "bcd", false, true},
	} {
		g, err := parseGlob(tc.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		if got := g.match(strings.Split(tc.rel, "/"), tc.dir); got != tc.want {
			t.Errorf("%q matches %q (dir %v) = %v, want %v", tc.pattern, tc.rel, tc.dir, got, tc.want)
		}
	}
}

func TestGlobErrors(t *testing.T) {
	for _, p := range []string{"", "  ", "/", "a//b", "[abc"} {
		if err := ValidateGlob(p); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
}

func TestPathFilter(t *testing.T) {
	f, err := newPathFilter([]string{".md", ".MDX"}, []string{"docs/**"}, []string{"drafts/"}, false)
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{
		"docs/a.md":          true,
		"docs/b.MD":          true,
		"docs/c.mdx":         true,
		"docs/a.txt":         false, // extension
		"README.md":          false, // not included
		"docs/drafts/d.md":   false, // ignored
		"docs/.git/e.md":     false, // ignored by default
		"docs/sub/deep/f.md": true,
		"docs/.md":           false, // a name that is only the extension
	} {
		if got := f.file(rel); got != want {
			t.Errorf("file(%q) = %v, want %v", rel, got, want)
		}
	}
	if f.dir("docs/drafts") || f.dir(".git") || !f.dir("docs/sub") {
		t.Error("dir: ignored folders are descended, or others are not")
	}
}

// TestPathFilterHidden: hidden files and folders are left out unless the
// watch says include_hidden; .git stays ignored either way.
func TestPathFilterHidden(t *testing.T) {
	def, _ := newPathFilter(nil, nil, nil, false)
	all, _ := newPathFilter(nil, nil, nil, true)
	for rel, want := range map[string][2]bool{ // default, include_hidden
		"a.md":            {true, true},
		".env":            {false, true},
		"docs/.draft.md":  {false, true},
		".cache/x":        {false, true},
		"a/.b/c":          {false, true},
		".git/config":     {false, false},
		"docs/..weird.md": {false, true},
	} {
		if got := [2]bool{def.file(rel), all.file(rel)}; got != want {
			t.Errorf("file(%q) = %v, want %v", rel, got, want)
		}
	}
	if def.dir(".cache") || !all.dir(".cache") || all.dir(".git") || !def.dir("docs") {
		t.Error("dir: hidden folders")
	}
}
