package glob

import (
	"path"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pat string
		sep Sep
		yes []string
		no  []string
	}{
		// Event types: '.' separates segments.
		{"deploy.failed", Dot, []string{"deploy.failed"}, []string{"deploy", "deploy.failed.x", "deploy_failed"}},
		{"deploy.*", Dot, []string{"deploy.failed", "deploy."}, []string{"deploy", "deploy.prod.failed"}},
		{"deploy.**", Dot, []string{"deploy.failed", "deploy.prod.failed"}, []string{"deploy", "deployx.failed"}},
		{"*.failed", Dot, []string{"deploy.failed"}, []string{"a.b.failed", "failed"}},
		{"**", Dot, []string{"a", "a.b.c"}, []string{}},
		{"**.failed", Dot, []string{"failed", "deploy.failed", "a.b.failed"}, []string{"failed.x"}},
		{"a.**.z", Dot, []string{"a.z", "a.b.z", "a.b.c.z"}, []string{"a", "z", "a.z.y"}},
		// Tool names: '.' too, so '*' stays within the server's or the tool's name.
		{"read_*", Dot, []string{"read_file", "read_"}, []string{"write_file", "gh.read_x"}},
		{"gh.*", Dot, []string{"gh.list", "gh.a/b"}, []string{"gh.repos.list", "gh", "ghx.list"}},
		{"gh.**", Dot, []string{"gh.list", "gh.repos.list"}, []string{"gh"}},
		{"run_comman[cd]", Dot, []string{"run_command"}, []string{"run_commane"}},
		{`run\_command`, Dot, []string{"run_command"}, []string{`run\_command`}},
		{"?ead_file", Dot, []string{"read_file"}, []string{"ad_file", ".ead_file"}},
		{"[^w]*", Dot, []string{"read_file"}, []string{"write_file"}},
		// Paths and names: '/' separates.
		{"*.go", Slash, []string{"a.go", ".go", "a.b.go"}, []string{"a/b.go", "a.gox"}},
		{"src/**/*.go", Slash, []string{"src/a.go", "src/x/y/a.go"}, []string{"a.go", "src/a.c"}},
		{"a/**", Slash, []string{"a/b", "a/b/c"}, []string{"a", "b/a/c"}},
		{"**/b", Slash, []string{"b", "a/b", "x/y/b"}, []string{"b/c"}},
		{"deploy-*", Slash, []string{"deploy-prod", "deploy-a.b"}, []string{"deploy"}},
		{"**", Slash, []string{"x", "x.y", "a/b"}, []string{}},
		{"é*[ü-ÿ]", Slash, []string{"éaü", "éÿ"}, []string{"eaü", "éa"}},
		{`\*`, Slash, []string{"*"}, []string{"a"}},
		{`a\é`, Slash, []string{"aé"}, []string{"a"}},
	} {
		p, err := Compile(c.pat, c.sep)
		if err != nil {
			t.Errorf("Compile(%q, %q): %v", c.pat, c.sep, err)
			continue
		}
		for _, n := range c.yes {
			if !p.Match(n) {
				t.Errorf("%q (sep %q) does not match %q", c.pat, c.sep, n)
			}
		}
		for _, n := range c.no {
			if p.Match(n) {
				t.Errorf("%q (sep %q) matches %q", c.pat, c.sep, n)
			}
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, c := range []struct{ pat, want string }{
		{"", "empty pattern"},
		{"a..b", "empty segment"},
		{"deploy.", "empty segment"},
		{"a**", "** must be a whole segment"},
		{"**x.y", "** must be a whole segment"},
		{"[a", "unclosed ["},
		{"[]", "empty []"},
		{"[^]", "empty []"},
		{"[z-a]", "runs backwards"},
		{"[a-]", "bad character class"},
		{`a\`, "escapes nothing"},
	} {
		_, err := Compile(c.pat, Dot)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Compile(%q) = %v, want an error with %q", c.pat, err, c.want)
		}
	}
}

func TestIsPattern(t *testing.T) {
	for s, want := range map[string]bool{
		"read_file": false, "gh.list": false, "deploy.failed": false,
		"read_*": true, "?": true, "[rw]x": true, `run\_command`: true, "**": true,
	} {
		if got := IsPattern(s); got != want {
			t.Errorf("IsPattern(%q) = %v", s, got)
		}
	}
}

func TestPathPattern(t *testing.T) {
	type probe struct {
		rel string
		dir bool
	}
	for _, c := range []struct {
		pat     string
		yes, no []probe
	}{
		{"*.tmp", []probe{{"a.tmp", false}, {"x/y/a.tmp", false}, {"x.tmp/in", false}}, []probe{{"a.tmpx", false}}},
		{"node_modules", []probe{{"node_modules", true}, {"a/node_modules/b/c.js", false}}, []probe{{"node_modules_x", false}}},
		{".git/", []probe{{".git", true}, {".git/config", false}, {"sub/.git/HEAD", false}}, []probe{{".git", false}}},
		{"/build", []probe{{"build", true}, {"build/out.o", false}}, []probe{{"src/build", true}}},
		{"./build", []probe{{"build/out.o", false}}, []probe{{"src/build/x", false}}},
		{"docs/*.md", []probe{{"docs/a.md", false}}, []probe{{"x/docs/a.md", false}, {"docs/x/a.md", false}}},
		{"**/testdata/**", []probe{{"testdata/a", false}, {"x/testdata/y/z", false}}, []probe{{"testdata", true}, {"testdata", false}}},
		{"src/**/*.go", []probe{{"src/a.go", false}, {"src/x/y/a.go", false}}, []probe{{"a.go", false}, {"lib/src/a.go", false}}},
		{"build/**", []probe{{"build/x", false}, {"build/x", true}}, []probe{{"build", true}, {"build", false}}},
	} {
		pp, err := CompilePath(c.pat)
		if err != nil {
			t.Errorf("CompilePath(%q): %v", c.pat, err)
			continue
		}
		for _, p := range c.yes {
			if !pp.Match(p.rel, p.dir) {
				t.Errorf("%q does not match %+v", c.pat, p)
			}
		}
		for _, p := range c.no {
			if pp.Match(p.rel, p.dir) {
				t.Errorf("%q matches %+v", c.pat, p)
			}
		}
	}
	// The tables list_files and the watch trigger had of their own.
	for _, c := range []struct {
		pat  string
		rel  string
		dir  bool
		want bool
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
		pp, err := CompilePath(c.pat)
		if err != nil {
			t.Fatalf("CompilePath(%q): %v", c.pat, err)
		}
		if got := pp.Match(c.rel, c.dir); got != c.want {
			t.Errorf("%q matches %q (dir %v) = %v, want %v", c.pat, c.rel, c.dir, got, c.want)
		}
	}
	for _, bad := range []string{"", "  ", "/", "a/../b", "..", "a**", "a**b", "[", "x/[a", "[abc", "a//b", "./"} {
		if _, err := CompilePath(bad); err == nil {
			t.Errorf("CompilePath(%q) is not an error", bad)
		}
	}
}

// FuzzMatch: within one segment (no "**", names without the separator)
// the dialect is path.Match's; the two domains agree on names without
// either separator; and a plain name matches only itself.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"*.go", "a.go"}, {"[a-c]?x", "bzx"}, {`\[*`, "[x"}, {"a*b*c", "aXbYc"}, {"deploy.*", "deploy.failed"}, {"[^a]", "b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, name string) {
		p, err := Compile(pat, Slash)
		want, perr := path.Match(pat, name)
		if err == nil && !strings.Contains(pat, "/") && !strings.Contains(name, "/") && !strings.Contains(pat, "**") {
			if perr != nil {
				t.Fatalf("Compile(%q) accepts what path.Match refuses: %v", pat, perr)
			}
			if got := p.Match(name); got != want {
				t.Fatalf("Match(%q, %q) = %v, path.Match says %v", pat, name, got, want)
			}
		}
		if err == nil && !strings.ContainsAny(pat, "./") && !strings.ContainsAny(name, "./") {
			d, derr := Compile(pat, Dot)
			if derr != nil || d.Match(name) != p.Match(name) {
				t.Fatalf("%q on %q: the domains disagree", pat, name)
			}
		}
		if err == nil && !IsPattern(pat) && p.Match(name) != (pat == name) {
			t.Fatalf("plain %q matches %q: %v", pat, name, p.Match(name))
		}
	})
}

// FuzzPathPattern: compiling and matching any pattern and path ends, and
// a path matches whenever a folder it is in does.
func FuzzPathPattern(f *testing.F) {
	for _, s := range [][2]string{{"**/*.md", "a/b/c.md"}, {"a/**/b/**", "a/x/b/y"}, {"[a-", "x"}, {"/x/", "x"}, {"build/", "build/a"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, rel string) {
		if len(pat) > 64 || len(rel) > 256 {
			return
		}
		pp, err := CompilePath(pat)
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(rel, '/'); i > 0 && pp.Match(rel[:i], true) && !pp.Match(rel, false) {
			t.Fatalf("%q matches the folder %q but not %q in it", pat, rel[:i], rel)
		}
	})
}
