package handlers

import (
	"strings"
	"testing"
)

func TestAllowlist(t *testing.T) {
	a, err := ParseAllowlist([]string{
		"go test ./...",
		"git log --oneline -n 20",
		"ls *",
		`echo 'hello world' "two words"`,
		"cat '*'",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv []string
		want bool
	}{
		{[]string{"go", "test", "./..."}, true},
		{[]string{"go", "test", "./...", "-exec=sh"}, false},
		{[]string{"go", "test"}, false},
		{[]string{"go", "test", "-exec=sh -c 'touch X' sh", "./..."}, false},
		{[]string{"git", "log", "--oneline", "-n", "20"}, true},
		{[]string{"git", "log", "--oneline", "-n", "20", "--output=x"}, false},
		{[]string{"ls", "docs"}, true},
		{[]string{"ls", "docs/sub"}, true},
		{[]string{"ls", "a..b"}, true},
		{[]string{"ls", "/etc"}, false},
		{[]string{"ls", "/"}, false},
		{[]string{"ls", ".."}, false},
		{[]string{"ls", "../.."}, false},
		{[]string{"ls", "docs/../../etc"}, false},
		{[]string{"ls", "docs/.."}, false},
		{[]string{"ls", "-la"}, false},
		{[]string{"ls", ""}, false},
		{[]string{"ls"}, false},
		{[]string{"echo", "hello world", "two words"}, true},
		{[]string{"cat", "*"}, true},
		{[]string{"cat", "notes.txt"}, false},
		{[]string{"/bin/ls", "docs"}, false},
		{[]string{"rm", "-rf", "victim"}, false},
		{nil, false},
	} {
		if got := a.Allows(tc.argv); got != tc.want {
			t.Errorf("Allows(%q) = %v; want %v", tc.argv, got, tc.want)
		}
	}
	if got := strings.Join(a.Entries(), "|"); !strings.HasPrefix(got, "go test ./...|git log") {
		t.Errorf("entries %s", got)
	}
}

func TestAllowlistWildReason(t *testing.T) {
	a, err := ParseAllowlist([]string{"ls", "ls *", "git log --oneline -n 20"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"ls", "/etc"}, `"/etc" cannot stand for the * of "ls *": it is an absolute path`},
		{[]string{"ls", "../.."}, `"../.." cannot stand for the * of "ls *": it has a .. path element`},
		{[]string{"ls", "-la"}, `it begins with -`},
		{[]string{"ls", "docs"}, ""},
		{[]string{"cat", "/etc"}, ""},
		{[]string{"git", "log", "/etc"}, ""},
	} {
		if got := a.WildReason(tc.argv); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("WildReason(%q) = %q; want %q", tc.argv, got, tc.want)
		}
	}
}

func TestAllowlistEntryErrors(t *testing.T) {
	for entry, want := range map[string]string{
		"go test; rm -rf x":    "give exactly one command",
		"go test | sh":         "give one simple command",
		"ls > out":             "give one simple command",
		"X=1 ls":               "give one simple command",
		"if true; then ls; fi": "give one simple command",
		"ls $HOME":             "only literal text",
		"ls $(pwd)":            "only literal text",
		`ls "$HOME"`:           "only literal text may be quoted",
		"ls *.go":              "globs and escapes are not patterns here",
		`ls \*`:                "globs and escapes are not patterns here",
		"* -rf":                "the program must be named",
		"sh -c *":              "sh runs what its arguments say",
		"python3 -c *":         "python3 runs what its arguments say",
		"env *":                "env runs what its arguments say",
		"ls 'unterminated":     "allowlist entry 1",
		"":                     "give exactly one command",
	} {
		_, err := ParseAllowlist([]string{entry})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("entry %q: %v; want an error containing %q", entry, err, want)
		}
	}
}

// TestRunnersByPathAndStdin checks the runners rules: a runner named by
// a path is a runner (an entry `/usr/bin/python3 *` would allow any
// code), the programs with a command language are runners, and a
// runner is refused standard input, which it may run.
func TestRunnersByPathAndStdin(t *testing.T) {
	for _, entry := range []string{"/usr/bin/python3 *", "/bin/sh *", "sqlite3 data.db *", "ed *"} {
		if _, err := ParseAllowlist([]string{entry}); err == nil || !strings.Contains(err.Error(), "runs what its arguments say") {
			t.Errorf("%q: %v; want it refused", entry, err)
		}
	}
	for argv, refused := range map[string]bool{
		"sh -s": true, "/bin/bash": true, "sqlite3 -readonly data.db": true, "timeout 5 cat": true,
		"python3 tools/report.py": true, "wc -l": false, "jq .": false,
	} {
		if got := StdinRefused(strings.Fields(argv)) != ""; got != refused {
			t.Errorf("StdinRefused(%s) = %v; want %v", argv, got, refused)
		}
	}
}
