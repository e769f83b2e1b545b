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

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
)

var updateTables = flag.Bool("update-tables", false, "rewrite the tables' goldens: testdata/{list,runs,events,search}-*.txt")

// tableHooks are hooks whose list row is wider than 80 columns.
func tableHooks(now time.Time) []engine.HookStatus {
	return []engine.HookStatus{
		{Name: "nightly-report", Project: "billing", Trigger: "cron 0 3 * * * (Europe/Berlin)", Enabled: true,
			NextDue: now.Add(16 * time.Hour), LastStatus: engine.StatusCompleted, LastStart: now.Add(-26 * time.Minute),
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

// TestTablesFitTerminal: runs', events' and search's tables fit a
// terminal's width as list's does, checked against goldens at 80 and
// 200 columns: at 80 no line is wider than 80, a time shows how long
// ago it was, and the run ids, hooks and statuses stay (the ids
// whole); at 200 the times are whole. Piped they are as tabwriter lays
// them out.
func TestTablesFitTerminal(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	runs := []*engine.Run{
		{ID: "r-01JQ3ZK8M4T7W2X9Y5B6C1D0EF", Hook: "nightly-report", Status: engine.StatusCompleted,
			Trigger: "cron 0 3 * * * (Europe/Berlin)", QueuedAt: now.Add(-7 * time.Hour), StartedAt: now.Add(-7 * time.Hour),
			FinishedAt: now.Add(-7*time.Hour + 94*time.Second)},
		{ID: "r-01JQ40A1B2C3D4E5F6G7H8J9KM", Hook: "pr-review", Status: engine.StatusFailed, Cause: engine.CauseStepFailed,
			CheckFailed: "tests", Trigger: "event github.pull_request.opened", QueuedAt: now.Add(-3 * time.Hour),
			StartedAt: now.Add(-3 * time.Hour), FinishedAt: now.Add(-3*time.Hour + 12*time.Second),
			Reason: "step 1 (tests) exited 1: go test ./... failed in package github.com/acme/billing/invoice"},
		{ID: "r-01JQ41N2P3Q4R5S6T7V8W9X0YZ", Hook: "watch-inbox", Status: engine.StatusRunning,
			Trigger: "watch ~/inbox/**/*.pdf", QueuedAt: now.Add(-2 * time.Minute), StartedAt: now.Add(-90 * time.Second)},
	}
	events := []api.Event{
		{Seq: 1042, Type: "github.pull_request.opened", Source: "webhook github (203.0.113.7)", Time: now.Add(-3 * time.Hour),
			Fate: &engine.EventFate{Runs: []engine.FateRun{{ID: "r-01JQ40A1B2C3D4E5F6G7H8J9KM", Hook: "pr-review"}},
				Rejected: []string{"pr-label", "pr-size"}}},
		{Seq: 1043, Type: "deploy.finsihed", Source: "cli", Time: now.Add(-time.Hour),
			Fate: &engine.EventFate{Unheard: true, Nearest: []string{"deploy.finished", "deploy.failed"}}},
		{Seq: 1044, Type: "mail.received", Source: "handler mail-intake", Time: now.Add(-time.Minute),
			Fate: &engine.EventFate{ClaimedBy: "spam-filter", ClaimReason: "the sender is on the block list"}},
	}
	hits := []engine.SearchHit{
		{RunID: "r-01JQ40A1B2C3D4E5F6G7H8J9KM", Hook: "pr-review", Status: engine.StatusFailed, CheckFailed: "tests",
			Time: now.Add(-3 * time.Hour), Score: 7.25,
			Snippet: "--- FAIL: TestInvoiceTotals (0.01s)\n    invoice_test.go:42: [timeout] after 30s waiting for the [ledger]"},
		{RunID: "r-01JQ3ZK8M4T7W2X9Y5B6C1D0EF", Hook: "nightly-report", Status: engine.StatusCompleted,
			Time: now.Add(-7 * time.Hour), Score: 3.5, Snippet: "the [ledger] closed at 03:01 with no [timeout]"},
	}
	for _, tt := range []struct {
		name  string
		write func(*cli) error
		// stays is what each width shows (a run id whole, a column's
		// header); full is a time at 200 columns, short the same at 80.
		stays       []string
		full, short string
	}{
		{"runs", func(c *cli) error { return c.writeRunTable(runs, now) },
			[]string{"ID", "HOOK", "STATUS", runs[0].ID, runs[1].ID, runs[2].ID, "nightly-rep", "completed"},
			"2026-11-29 07:00:00 UTC", "3h ago"},
		{"events", func(c *cli) error { return c.writeEventTable(events, now) },
			[]string{"SEQ", "TIME", "TYPE", "1042", "deploy.finsihed"},
			"2026-11-29 07:00:00 UTC", "3h ago"},
		{"search", func(c *cli) error { return c.writeSearchTable(hits, now) },
			[]string{"ID", "HOOK", "STATUS", hits[0].RunID, hits[1].RunID, "nightly-rep", "completed"},
			"11-29 07:00:00", "3h ago"},
	} {
		var piped bytes.Buffer
		if err := tt.write(&cli{stdout: &piped}); err != nil {
			t.Fatal(err)
		}
		if maxWidth(piped.String()) <= 80 {
			t.Fatalf("%s: piped, the table must be wider than 80 columns for this test:\n%s", tt.name, piped.String())
		}
		for _, width := range []int{80, 200} {
			var out bytes.Buffer
			c := &cli{stdout: &out, color: "never", host: host{columns: width}}
			if err := tt.write(c); err != nil {
				t.Fatal(err)
			}
			if n := maxWidth(out.String()); n > width {
				t.Errorf("%s, %d columns: a line of %d:\n%s", tt.name, width, n, out.String())
			}
			for _, s := range tt.stays {
				if !strings.Contains(out.String(), s) {
					t.Errorf("%s, %d columns: no %q:\n%s", tt.name, width, s, out.String())
				}
			}
			if time := map[int]string{80: tt.short, 200: tt.full}[width]; !strings.Contains(out.String(), time) {
				t.Errorf("%s, %d columns: no time shown as %q:\n%s", tt.name, width, time, out.String())
			}
			if width == 80 && !strings.Contains(out.String(), "…") {
				t.Errorf("%s, 80 columns: nothing was cut:\n%s", tt.name, out.String())
			}
			golden := filepath.Join("testdata", tt.name+"-"+strconv.Itoa(width)+".txt")
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
				t.Errorf("%s, %d columns:\n%s\nwant (%s):\n%s", tt.name, width, out.String(), golden, want)
			}
		}
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

// maxWidth is the widest line of s, in runes.
func maxWidth(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, utf8.RuneCountInString(l))
	}
	return w
}
