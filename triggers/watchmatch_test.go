package triggers

import (
	"testing"
)

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
