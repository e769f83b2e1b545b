package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hookd/hookd/engine"
)

var updateTables = flag.Bool("update-tables", false, "rewrite testdata/list-*.txt")

// tableHooks are hooks whose list row is wider than 80 columns.
func tableHooks(now time.Time) []engine.HookStatus {
	return []engine.HookStatus{
		{Name: "nightly-report", Project: "billing", Trigger: "cron 0 3 * * * (Europe/Berlin)", Enabled: true,
			LastStatus: engine.StatusCompleted, LastStart: now.Add(-26 * time.Minute),
			File: "hooks.d/reports/nightly-report.yaml", Version: "9f2c4e1a7b3d"},
		{Name: "pr-review", Trigger: "event github.pull_request.opened, github.pull_request.synchronize", Enabled: true,
			LastStatus: engine.StatusFailed, LastCheckFailed: "tests", LastStart: now.Add(-3 * time.Hour),
			InFlight: "r-01JQ3Z", Queued: 2, File: "hooks.d/review/pr-review.yaml", Version: "0a1b2c3d4e5f"},
		{Name: "watch-inbox", Trigger: "watch ~/inbox/**/*.pdf", Enabled: true, Paused: true,
			LastStatus: engine.StatusSkipped, LastStart: now.Add(-90 * time.Second),
			File: "hooks.d/watch-inbox.yaml", Version: "77aa88bb99cc"},
	}
}

// TestListFitsTerminal: on a terminal list's table fits its width, the
// least useful columns cut first and marked with …; at 200 columns
// nothing is cut; piped (no width) it is as tabwriter lays it out.
func TestListFitsTerminal(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	hooks := tableHooks(now)
	for _, width := range []int{80, 200} {
		var out bytes.Buffer
		c := &cli{stdout: &out, color: "never", host: host{columns: width}}
		if err := c.writeHookTable(hooks, now); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("%d columns: a line of %d: %q", width, n, l)
			}
		}
		if width == 80 && !strings.Contains(out.String(), "…") {
			t.Errorf("80 columns: nothing was cut:\n%s", out.String())
		}
		golden := filepath.Join("testdata", "list-"+strconv.Itoa(width)+".txt")
		if *updateTables {
			if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != string(want) {
			t.Errorf("%d columns:\n%s\nwant (%s):\n%s", width, out.String(), golden, want)
		}
	}
	var piped, tw bytes.Buffer
	if err := (&cli{stdout: &piped}).writeHookTable(hooks, now); err != nil {
		t.Fatal(err)
	}
	if err := hookTable(hooks, now).tabwriter(&tw); err != nil {
		t.Fatal(err)
	}
	if piped.String() != tw.String() {
		t.Errorf("piped, the table is not tabwriter's:\n%s\nwant:\n%s", piped.String(), tw.String())
	}
}

// TestTableColour: status words are coloured on a terminal, with
// --color always when piped, and never with NO_COLOR or --color never;
// an escape sequence in a cell's data is escaped, not obeyed.
func TestTableColour(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	hooks := tableHooks(now)
	hooks[0].Name = "evil\x1b[2J"
	env := func(vars ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(vars); i += 2 {
				if vars[i] == k {
					return vars[i+1]
				}
			}
			return ""
		}
	}
	for _, tt := range []struct {
		name    string
		columns int
		color   string
		getenv  func(string) string
		want    bool
	}{
		{"terminal", 200, "", env(), true},
		{"terminal, NO_COLOR", 200, "", env("NO_COLOR", "1"), false},
		{"terminal, --color never", 200, "never", env(), false},
		{"piped", 0, "", env(), false},
		{"piped, --color always", 0, "always", env("NO_COLOR", "1"), true},
	} {
		var raw bytes.Buffer
		safe := newTermSafe(&raw)
		c := &cli{stdout: safe, color: tt.color, host: host{columns: tt.columns, getenv: tt.getenv}}
		if err := c.writeHookTable(hooks, now); err != nil {
			t.Fatal(err)
		}
		out := raw.String()
		green := strings.Contains(out, "\x1b[32mcompleted")
		if green != tt.want || strings.Contains(out, "\x1b[31mfailed, check failed: tests") != tt.want {
			t.Errorf("%s: coloured %v, want %v:\n%q", tt.name, green, tt.want, out)
		}
		if strings.Contains(out, "\x1b[2J") || !strings.Contains(out, `evil\u001b[2J`) {
			t.Errorf("%s: the escape sequence in a hook's name was not escaped:\n%q", tt.name, out)
		}
	}
}
