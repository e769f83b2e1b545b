package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
	"github.com/hookd/hookd/store"
)

// timelineMarks measures, in the browser, the overview timeline's run
// marks and axis: the axis' left and width (the first row's band), the
// leftmost mark's left and the rightmost mark's right, in CSS pixels.
const timelineMarks = `(() => {
	const band = document.querySelector("svg.timeline rect.band").getBoundingClientRect();
	const marks = [...document.querySelectorAll("svg.timeline rect[class^='st-']")].map(r => r.getBoundingClientRect());
	return {axisLeft: band.left, axisWidth: band.width, marks: marks.length,
		left: Math.min(...marks.map(b => b.left)), right: Math.max(...marks.map(b => b.right))};
})()`

// timelineLabels measures the timeline's axis labels as laid out: each
// label's text and bounding box.
const timelineLabels = `[...document.querySelectorAll("svg.timeline text.axis")].map(t => {
	const b = t.getBoundingClientRect();
	return {text: t.textContent, left: b.left, right: b.right, top: b.top, bottom: b.bottom};
})`

type marksBox struct {
	AxisLeft, AxisWidth float64
	Marks               int
	Left, Right         float64
}

type labelBox struct {
	Text                     string
	Left, Right, Top, Bottom float64
}

// seedRecent records runs of the hooks over the last minutes, as a new
// install's daemon would have in its first ten minutes.
func seedRecent(t *testing.T, dbPath string, hooks []string, now time.Time, ago ...time.Duration) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	for _, h := range hooks {
		for _, a := range ago {
			n++
			at := now.Add(-a)
			r := &engine.Run{ID: fmt.Sprintf("new%03d", n), Hook: h, Trigger: "schedule", Status: engine.StatusCompleted,
				QueuedAt: at, StartedAt: at, FinishedAt: at.Add(3 * time.Second)}
			if err := db.InsertRun(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBrowserNewInstall reads issue 32's dashboard items in Chromium on a
// new install whose hooks ran for ten minutes, one step failed and two
// model calls were made (one answered without usage, one refused with a
// 401):
//   - the overview's timeline zooms to those minutes: its marks spread
//     over the axis instead of bunching at "now" on a day's axis, and no
//     two of its axis labels overlap ("03:00" sat on "now");
//   - the failed step's reason is shown once in the run list's row and
//     once in the run page's outcome (it was shown twice: as the reason
//     and as the error), and the overview's recent failures list the run
//     with it;
//   - the overview's spend says "1 run(s) with unreported usage in 24h"
//     once: the refused call is not counted, and it is not repeated for
//     the last hour.
func TestBrowserNewInstall(t *testing.T) {
	ctx := newChromium(t)
	model := llmtest.NewFunc(func(r llmtest.Request) llmtest.Reply {
		if bytes.Contains(r.Raw, []byte("server-down")) {
			return llmtest.Fail(401, "invalid api key")
		}
		return llmtest.Reply{Content: "All is well.", NoUsage: true}
	})
	defer model.Close()
	e := newEnv(t, "listen: 127.0.0.1:0\nllm:\n  model: test-model\n  base_url: "+model.BaseURL()+"\n", map[string]string{
		"build.yaml": `description: a build whose step times out
steps:
  - type: shell
    timeout: 1s
    command: echo compiling; sleep 30
skip_llm: true
`,
		"disk-space.yaml": "trigger:\n  every: 6h\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n",
		"nightly.yaml":    "trigger:\n  cron: \"0 3 * * *\"\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n",
		"ask.yaml":        "steps:\n  - type: shell\n    command: \"true\"\nprompt: \"Is all well?\"\n",
		"ask-down.yaml":   "steps:\n  - type: shell\n    command: \"true\"\nprompt: \"Is the server-down?\"\n",
	})
	seedRecent(t, e.path(".hookd/hookd.db"), []string{"disk-space", "nightly"}, time.Now(),
		9*time.Minute, 7*time.Minute, 4*time.Minute, 2*time.Minute)
	e.environ = []string{"HOOKD_TOKEN=" + testToken}
	d := e.serve()
	base := "http://" + d.tcpAddr()

	e.must(0, "fire", "disk-space", "--wait")
	e.must(0, "fire", "ask", "--wait")
	e.run("fire", "ask-down", "--wait")
	e.run("fire", "build", "--wait")
	runs := e.listRuns("build", "--limit", "1")
	if len(runs) != 1 || runs[0].Status != engine.StatusFailed || runs[0].Reason == "" {
		t.Fatalf("the build's run: %+v", runs)
	}
	failed := runs[0]
	// What makes the reason show twice when shown as reason and error.
	if failed.Error != failed.Reason {
		t.Fatalf("the failed step's run has the error %q beside the reason %q: not the case this test is for", failed.Error, failed.Reason)
	}
	reason := failed.Reason
	t.Logf("the failed run %s's reason: %q", failed.ID, reason)
	// The run list and the recent failures cut a reason at 100
	// characters: one that fits shows whole, and a repeat would show.
	if n := len([]rune(reason)); n > 100 {
		t.Fatalf("the reason is %d characters long: the lists cut it at 100, and a second copy would not show", n)
	}

	doBrowser(t, ctx, "log in",
		chromedp.Navigate(base+"/hooks"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("hook-build")),
		waitRefreshed,
	)

	// The run list: the failed run's row says the reason, once and
	// nothing after it (the error was printed after it, and is the same).
	doBrowser(t, ctx, "open the run list",
		chromedp.Navigate(base+"/runs"),
		chromedp.WaitVisible(chromedp.ID("run-"+failed.ID)),
		waitRefreshed,
	)
	row := readBrowser(t, ctx, "read the failed run's row", textOf("#run-"+failed.ID))
	why := readBrowser(t, ctx, "read the failed run's reason", textOf("#run-"+failed.ID+" td:last-child"))
	if n := strings.Count(row, reason); n != 1 || strings.TrimSpace(why) != reason {
		t.Errorf("the run list's row shows the reason %q %d times, its reason cell %q, want it once:\n%s", reason, n, why, row)
	}

	// The run page: the reason once in the outcome.
	doBrowser(t, ctx, "open the failed run",
		chromedp.Navigate(base+"/runs/"+failed.ID),
		chromedp.WaitVisible(chromedp.ID("outcome")),
	)
	outcome := readBrowser(t, ctx, "read the outcome", textOf("#outcome"))
	if n := strings.Count(outcome, reason); n != 1 {
		t.Errorf("the run page's outcome shows the reason %q %d times, want once:\n%s", reason, n, outcome)
	}

	// The overview, at a laptop's width.
	doBrowser(t, ctx, "open the overview",
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(base+"/"),
		waitRefreshed,
		chromedp.WaitVisible(chromedp.CSS("svg.timeline")),
	)

	// The recent failures list the build's run, with its reason once.
	cell := readBrowser(t, ctx, "read the recent failure", chromedp.Evaluate[string](fmt.Sprintf(
		`[...document.querySelectorAll("#failures tr.failure")].filter(tr => tr.querySelector("a").textContent === %q).map(tr => tr.querySelector("td:last-child").innerText).join("\n")`, failed.ID)))
	if cell == "" {
		failures := readBrowser(t, ctx, "read the recent failures", textOf("main"))
		t.Errorf("the overview's recent failures do not list %s:\n%s", failed.ID, failures)
	} else if strings.TrimSpace(cell) != reason {
		t.Errorf("the recent failure's reason reads %q, want %q once", cell, reason)
	}

	// The timeline: the ten minutes' runs spread over the axis.
	m := readBrowser(t, ctx, "measure the timeline's marks", chromedp.Evaluate[marksBox](timelineMarks))
	if m.Marks < 10 || m.AxisWidth < 100 {
		t.Fatalf("the timeline draws %d runs on an axis %.0f px wide, want the 12 of the install", m.Marks, m.AxisWidth)
	}
	t.Logf("the timeline's %d marks: %.0f to %.0f px along its %.0f px axis", m.Marks, m.Left-m.AxisLeft, m.Right-m.AxisLeft, m.AxisWidth)
	if spread := m.Right - m.Left; spread < m.AxisWidth/4 {
		t.Errorf("the timeline's marks span %.0f px of its %.0f px axis (%.0f to %.0f from its left): bunched at now",
			spread, m.AxisWidth, m.Left-m.AxisLeft, m.Right-m.AxisLeft)
	}
	if from := (m.Left - m.AxisLeft) / m.AxisWidth; from > 0.75 {
		t.Errorf("the timeline's oldest run is %.0f%% along its axis: bunched at now", 100*from)
	}
	// No two axis labels overlap.
	labels := readBrowser(t, ctx, "measure the timeline's labels", chromedp.Evaluate[[]labelBox](timelineLabels))
	if len(labels) < 3 || labels[len(labels)-1].Text != "now" {
		t.Errorf("the timeline's axis labels: %+v, want at least two times and now", labels)
	}
	t.Logf("the timeline's axis labels: %+v", labels)
	for i, a := range labels {
		for _, b := range labels[i+1:] {
			if a.Left < b.Right && b.Left < a.Right && a.Top < b.Bottom && b.Top < a.Bottom {
				t.Errorf("the timeline's labels %q (%.1f to %.1f px) and %q (%.1f to %.1f px) overlap", a.Text, a.Left, a.Right, b.Text, b.Left, b.Right)
			}
		}
	}

	// The spend: one run with unreported usage (ask's), said once; the
	// refused call of ask-down reported nothing because it spent nothing.
	spend := readBrowser(t, ctx, "read the spend", textOf("#spend"))
	if n := strings.Count(spend, "unreported"); n != 1 || !strings.Contains(spend, "1 run(s) with unreported usage in 24h") {
		t.Errorf("the overview's spend says the unreported usage %d times, want once as \"1 run(s) with unreported usage in 24h\":\n%s", n, spend)
	}
}
