package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
)

var t0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func TestStrip(t *testing.T) {
	briefs := []engine.RunBrief{
		{ID: "new", Hook: "h", Status: engine.StatusFailed, QueuedAt: t0, StartedAt: t0, FinishedAt: t0.Add(10 * time.Second)},
		{ID: "mid", Hook: "h", Status: engine.StatusCompleted, QueuedAt: t0, StartedAt: t0, FinishedAt: t0.Add(time.Second)},
		{ID: "old", Hook: "h", Status: engine.StatusSkipped, QueuedAt: t0},
	}
	svg := string(strip(briefs, stripRuns))
	if n := strings.Count(svg, "<rect class=\"st-"); n != 3 {
		t.Fatalf("%d run bars, want 3:\n%s", n, svg)
	}
	// The newest at the right, full height; the skipped one the minimum.
	right := stripRuns*(stripBar+stripGap) - (stripBar + stripGap)
	for _, want := range []string{
		`<a href="/runs/new"><rect class="st-failed" x="` + itoa(right) + `" y="0.0" width="6" height="24.0">`,
		`<a href="/runs/old"><rect class="st-skipped" x="` + itoa(right-2*(stripBar+stripGap)) + `" y="21.0" width="6" height="3.0">`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("strip lacks %s:\n%s", want, svg)
		}
	}
	if empty := string(strip(nil, stripRuns)); strings.Contains(empty, "st-") || !strings.HasPrefix(empty, "<svg") {
		t.Errorf("strip of no runs: %s", empty)
	}
}

// TestStripCheckFailed: a completed run whose check failed is drawn red
// (st-check-failed), not green, and its title says which check.
func TestStripCheckFailed(t *testing.T) {
	briefs := []engine.RunBrief{
		{ID: "nightly", Hook: "h", Status: engine.StatusCompleted, CheckFailed: "tests", QueuedAt: t0, StartedAt: t0, FinishedAt: t0.Add(time.Second)},
	}
	for _, svg := range []string{string(strip(briefs, stripRuns)), string(timeline(briefs, t0.Add(time.Minute), time.Hour))} {
		if !strings.Contains(svg, `class="st-check-failed"`) || strings.Contains(svg, "st-completed") ||
			!strings.Contains(svg, "h completed, check failed: tests") {
			t.Errorf("a completed run with check_failed is not drawn so:\n%s", svg)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestTimelineEscapes(t *testing.T) {
	now := t0
	briefs := []engine.RunBrief{
		{ID: `a"><script>x</script>`, Hook: `<img src=x onerror=alert(1)>`, Status: engine.StatusRunning, QueuedAt: now.Add(-time.Hour), StartedAt: now.Add(-time.Hour)},
		{ID: "b", Hook: "zeta", Status: engine.StatusCompleted, QueuedAt: now.Add(-2 * time.Hour), StartedAt: now.Add(-2 * time.Hour), FinishedAt: now.Add(-time.Hour)},
	}
	svg := string(timeline(briefs, now, 24*time.Hour))
	if strings.Contains(svg, "<script") || strings.Contains(svg, "<img") {
		t.Fatalf("timeline does not escape names:\n%s", svg)
	}
	if strings.Count(svg, `<rect class="st-`) != 2 || !strings.Contains(svg, ">zeta</text>") {
		t.Errorf("timeline:\n%s", svg)
	}
	// The completed run: from 2h to 1h ago of the 3 hours the timeline
	// zooms to (its oldest run is 2 hours old).
	x0 := float64(tlLabel) + 1.0/3*tlWidth
	if !strings.Contains(svg, fmt.Sprintf(`x="%.1f"`, x0)) {
		t.Errorf("the completed run is not at x=%.1f:\n%s", x0, svg)
	}
	if none := string(timeline(nil, now, 24*time.Hour)); !strings.Contains(none, "no runs in the last") {
		t.Errorf("empty timeline: %s", none)
	}
}

// TestTimelineZoom: on a new install, runs of the last minutes spread
// over the axis instead of bunching at "now", the labels step with the
// span, and none comes so close to "now" that they overlap.
func TestTimelineZoom(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 30, 0, time.Local)
	var briefs []engine.RunBrief
	for i := range 10 {
		at := now.Add(-time.Duration(i) * time.Minute)
		briefs = append(briefs, engine.RunBrief{ID: fmt.Sprintf("r%d", i), Hook: "h", Status: engine.StatusCompleted,
			QueuedAt: at, StartedAt: at, FinishedAt: at.Add(time.Second)})
	}
	svg := string(timeline(briefs, now, 24*time.Hour))
	// The oldest run (9 minutes ago) in a 15-minute axis: 6/15 from its start.
	if x := float64(tlLabel) + 6.0/15*tlWidth; !strings.Contains(svg, fmt.Sprintf(`x="%.1f"`, x)) {
		t.Errorf("the oldest run is not at x=%.1f of a 15-minute axis:\n%s", x, svg)
	}
	if !strings.Contains(svg, `aria-label="runs of the last 15m by hook"`) || !strings.Contains(svg, ">02:50</text>") {
		t.Errorf("the axis is not 15 minutes long with 5-minute labels:\n%s", svg)
	}
	// 03:00 is half a minute before now: its label would sit on "now".
	if strings.Contains(svg, ">03:00</text>") {
		t.Errorf("a label overlaps now:\n%s", svg)
	}
	day := []engine.RunBrief{{ID: "old", Hook: "h", Status: engine.StatusCompleted, QueuedAt: now.Add(-20 * time.Hour),
		StartedAt: now.Add(-20 * time.Hour), FinishedAt: now.Add(-20 * time.Hour)}}
	if svg := string(timeline(day, now, 24*time.Hour)); !strings.Contains(svg, `aria-label="runs of the last 24h by hook"`) {
		t.Errorf("a run 20 hours old does not keep the day's axis:\n%s", svg)
	}
}

func TestWaterfall(t *testing.T) {
	run := &engine.Run{ID: "r", StartedAt: t0, FinishedAt: t0.Add(10 * time.Second), Status: engine.StatusCompleted,
		Steps: []*engine.StepResult{{Index: 0, Name: "fetch", Type: "shell", Started: t0, Duration: 2 * time.Second}}}
	tr := &agent.Transcript{Rounds: []*agent.Round{{
		Call:      agent.ModelCall{Started: t0.Add(2 * time.Second), Latency: 3 * time.Second},
		ToolCalls: []*agent.ToolCall{{Name: "read_file", Duration: time.Second}, {Name: "run_command", DeniedBy: "allow-commands"}},
	}}}
	svg := string(waterfall(run, tr, t0))
	for _, want := range []string{">step 0 fetch</text>", ">model call 1</text>", "tool read_file", "tool run_command",
		`<rect class="step" x="220.0" y="3" width="120.0"`, // 2s of 10s over 600px
		`<rect class="model" x="340.0"`, `<rect class="tool" x="520.0"`, `<rect class="st-failed" x="580.0"`,
		"fetch, 2s<", ">10s</text>"} { // the CLI's words for durations (human.Duration), not 2.0s

		if !strings.Contains(svg, want) {
			t.Errorf("waterfall lacks %s:\n%s", want, svg)
		}
	}
	if waterfall(&engine.Run{}, nil, t0) != "" {
		t.Errorf("a run with no steps and no model calls has a waterfall")
	}
}

// TestSessionsBounded: however many logins and login links, the memory
// they hold is bounded; a login link works once and expires.
func TestSessionsBounded(t *testing.T) {
	now := t0
	s := newSessions(func() time.Time { return now })
	first, _ := s.open()
	for range maxSessions + 50 {
		s.open()
		s.newCode()
	}
	if n, c := s.count(); n != maxSessions || c != maxCodes {
		t.Errorf("%d sessions, %d codes; want at most %d and %d", n, c, maxSessions, maxCodes)
	}
	if s.get(first) != nil {
		t.Errorf("the oldest session survived the cap")
	}
	code := s.newCode()
	if !s.useCode(code) || s.useCode(code) {
		t.Errorf("a login code is not good exactly once")
	}
	late := s.newCode()
	id, _ := s.open()
	now = now.Add(codeTTL + time.Second)
	if s.useCode(late) {
		t.Errorf("an expired login code worked")
	}
	if s.get(id) == nil {
		t.Errorf("a session expired before its time")
	}
	now = now.Add(sessionTTL)
	if s.get(id) != nil {
		t.Errorf("a session outlived its time")
	}
	if s.useCode("") {
		t.Errorf("an empty code worked")
	}
}

func TestHostAllowed(t *testing.T) {
	s := &Server{opts: Options{Hosts: []string{"hookd.lan"}}}
	for host, want := range map[string]bool{
		"127.0.0.1:8787": true, "localhost:8787": true, "[::1]:8787": true, "192.168.1.5": true,
		"hookd.lan:8787": true, "HOOKD.LAN": true, "app.localhost:1": true,
		"attacker.example:8787": false, "127.0.0.1.attacker.example": false, "": false, "localhost.attacker.example": false,
	} {
		if got := s.hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestLocalNext(t *testing.T) {
	for next, want := range map[string]string{
		"/runs?hook=a": "/runs?hook=a", "": "/", "//evil.example": "/", "https://evil.example/": "/",
		"/\\evil.example": "/", "runs": "/", "/ok/path": "/ok/path",
	} {
		if got := localNext(next); got != want {
			t.Errorf("localNext(%q) = %q, want %q", next, got, want)
		}
	}
}

// TestSpendUnreportedOnce: the overview's spend card and a hook's row
// on the hooks page say the runs with unreported usage once, not in
// the text of each window (issue 32: twice on each before).
func TestSpendUnreportedOnce(t *testing.T) {
	s, err := New(Options{Source: noSource{}})
	if err != nil {
		t.Fatal(err)
	}
	w := budget.SpendWindows{
		Hour: budget.SpendWindow{Tokens: 10, Limit: 100, Runs: 1, Unreported: 1},
		Day:  budget.SpendWindow{Tokens: 30, Runs: 3, Unreported: 2},
	}
	for _, c := range []struct {
		page string
		data any
	}{
		{"overview", overviewData{Now: t0, Spend: budget.Spend{Daemon: w}}},
		{"hooks", hooksData{Now: t0, Hooks: []hookRow{{HookStatus: engine.HookStatus{Name: "ask", Enabled: true, Budget: &w}}}}},
	} {
		var buf strings.Builder
		if err := s.pages[c.page].ExecuteTemplate(&buf, "layout", page{Data: c.data}); err != nil {
			t.Fatalf("%s: %v", c.page, err)
		}
		if n := strings.Count(buf.String(), "2 run(s) with unreported usage in 24h"); n != 1 || strings.Count(buf.String(), "unreported usage") != 1 {
			t.Errorf("the %s page says the unreported usage %d times, want once:\n%s", c.page, strings.Count(buf.String(), "unreported usage"), buf.String())
		}
	}
}

// noSource is a Source for tests that only render pages.
type noSource struct{ Source }
