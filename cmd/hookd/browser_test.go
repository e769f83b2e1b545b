package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
	"github.com/hookd/hookd/store"
)

// The browser tests drive a real headless Chromium (Debian's chromium
// package) with chromedp against a real `hookd serve`. One browser serves
// every step. Without Chromium they skip, unless HOOKD_REQUIRE_CHROMIUM=1
// (CI sets it), where they fail.

// updateScreenshot rewrites docs/dashboard.png (for docs/daemon.md) from the
// overview the browser test renders.
var updateScreenshot = flag.Bool("update-screenshot", false, "write the dashboard screenshot to docs/dashboard.png")

// chromiumPath finds the browser: $HOOKD_CHROMIUM, else chromium on the
// PATH or at Debian's path.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HOOKD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found for the browser tests: install Debian's chromium package (apt-get install chromium) or set HOOKD_CHROMIUM"
	if os.Getenv("HOOKD_REQUIRE_CHROMIUM") == "1" {
		t.Fatal(msg + " (HOOKD_REQUIRE_CHROMIUM=1: the browser tests must run)")
	}
	t.Skip(msg)
	return ""
}

// browserWait bounds each browser step; generous for a loaded machine.
const browserWait = 90 * time.Second

// chromium is the package's one Chromium, started by the first test that
// wants a browser and stopped by TestMain (stopChromium): starting one
// costs ~4 CPU-s, as much as a browser test's own work. Each test gets a
// browser context of its own, as a new profile would (cookies, storage,
// tabs): the tests share no state through it.
var chromium struct {
	mu   sync.Mutex
	ctx  context.Context // the browser's first tab, whose life is the browser's
	stop func()
	err  error
}

// newChromium returns a context of a new tab of headless Chromium, in a
// browser context of its own that ends with t.
func newChromium(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	browser, err := startChromium(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := firstCall(ctx); err != nil {
		t.Fatalf("open a tab in Chromium (%s): %v", path, err)
	}
	return ctx
}

// firstCall makes the first call on a chromedp context, which starts its
// browser or opens its tab, within browserWait. What it starts lives as
// long as that call's context, so the call has no timeout of its own:
// the wait is bounded here instead.
func firstCall(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(browserWait):
		return fmt.Errorf("no answer in %s", browserWait)
	}
}

// startChromium starts the package's Chromium once, and returns the
// context of its first tab.
func startChromium(path string) (context.Context, error) {
	chromium.mu.Lock()
	defer chromium.mu.Unlock()
	if chromium.ctx != nil || chromium.err != nil {
		return chromium.ctx, chromium.err
	}
	profile, err := os.MkdirTemp("", "hookd-chromium")
	if err != nil {
		chromium.err = err
		return nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	stop := func() {
		cancel()
		cancelAlloc()
		os.RemoveAll(profile)
	}
	if err := firstCall(ctx); err != nil {
		stop()
		chromium.err = fmt.Errorf("start Chromium (%s): %w", path, err)
		return nil, chromium.err
	}
	chromium.ctx, chromium.stop = ctx, stop
	return ctx, nil
}

// stopChromium stops the package's Chromium, if a test started it.
func stopChromium() {
	chromium.mu.Lock()
	defer chromium.mu.Unlock()
	if chromium.stop != nil {
		chromium.stop()
		chromium.ctx, chromium.stop = nil, nil
	}
}

// doBrowser runs browser steps within browserWait; on failure it shows
// where the browser was and what the page said.
func doBrowser(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		browserFailed(t, ctx, what, err)
	}
}

// readBrowser runs one browser action that returns a value.
func readBrowser[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		browserFailed(t, ctx, what, err)
	}
	return v
}

func browserFailed(t *testing.T, ctx context.Context, what string, err error) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(c, chromedp.Location())
	main, _ := chromedp.Run(c, chromedp.OuterHTML(chromedp.CSS("main")))
	t.Fatalf("%s: %v\nthe browser is at %s:\n%.6000s", what, err, loc, main)
}

// waitJS polls a JavaScript expression until it is true (the step's
// context bounds the wait).
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0))
}

// textOf reads the text of the element a CSS selector names ("" when
// there is none), at once: a refresh may replace the element at any time.
func textOf(sel string) chromedp.Action[string] {
	return chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, sel))
}

// waitRefreshed waits for a live page's first refresh, which it makes
// when its event stream opens (app.js): the page is then settled, and
// steps do not act on elements the refresh replaces.
var waitRefreshed = waitJS(`document.getElementById("main").dataset.refreshed`)

// seedDay records a day of runs of the hooks, as a daemon would have,
// so that the overview's timeline has something to draw.
func seedDay(t *testing.T, dbPath string, hooks []string, now time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	n := 0
	for i, h := range hooks {
		every := time.Duration(20+15*i) * time.Minute
		for at := now.Add(-24 * time.Hour).Add(time.Duration(i) * 7 * time.Minute); at.Before(now.Add(-2 * time.Minute)); at = at.Add(every) {
			n++
			st := engine.StatusCompleted
			switch x := rng.IntN(20); {
			case x == 0:
				st = engine.StatusFailed
			case x < 3:
				st = engine.StatusSkipped
			}
			d := time.Duration(2+rng.IntN(40)) * time.Second
			r := &engine.Run{ID: fmt.Sprintf("seed%05d", n), Hook: h, Trigger: "schedule", Status: st,
				QueuedAt: at, StartedAt: at, FinishedAt: at.Add(d)}
			if st == engine.StatusSkipped {
				r.StartedAt, r.FinishedAt, r.Reason = time.Time{}, at, "in_flight: the previous run is still running"
			}
			if err := db.InsertRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBrowser logs in with a real browser, sees the hooks, fires one and
// watches its run appear and finish on the run list without a reload,
// fires a model hook from the page with an event and reads its steps and
// transcript, pauses a hook, and renders the overview's timeline (the
// screenshot of docs/daemon.md).
func TestBrowser(t *testing.T) {
	ctx := newChromium(t)
	model := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "call_read", Name: "read_file", Args: `{"path":"notes.txt"}`}),
		llmtest.Reply{Content: "The notes say all is well.", Usage: &llmtest.Usage{Prompt: 40, Completion: 7}},
	)
	defer model.Close()
	e := newEnv(t, "listen: 127.0.0.1:0\nllm:\n  model: test-model\n  base_url: "+model.BaseURL()+"\n", nil)
	e.write("hooks.d/slow.yaml", `description: waits for the test
steps:
  - name: first
    type: shell
    command: echo first done
  - name: wait
    type: shell
    command: |
      while [ ! -f `+e.path("show")+` ]; do sleep 0.05; done; echo live-line-of-wait; printf '%0300d\n' 0
      while [ ! -f `+e.path("release")+` ]; do sleep 0.05; done; echo released
skip_llm: true
`)
	e.write("hooks.d/triage.yaml", `description: asks the model about the notes
steps:
  - name: gather
    type: shell
    command: printf 'event from %s\n' {{event.who}}
prompt: "Read the notes. {{step_0}}"
tools: [read_file]
`)
	e.write("hooks.d/nightly-backup.yaml", "trigger:\n  cron: \"0 3 * * *\"\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n")
	e.write("hooks.d/disk-space.yaml", "trigger:\n  every: 6h\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n")
	e.write("notes.txt", "all is well\n")
	seedDay(t, e.path(".hookd/hookd.db"), []string{"disk-space", "nightly-backup", "slow", "triage"}, time.Now())
	e.environ = []string{"HOOKD_TOKEN=" + testToken}
	d := e.serve()
	base := "http://" + d.tcpAddr()

	// Log in: the dashboard sends the browser to the login form.
	doBrowser(t, ctx, "log in",
		chromedp.Navigate(base+"/hooks"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("hook-slow")),
		waitRefreshed,
	)
	names := readBrowser(t, ctx, "read the hooks", textOf("table.hooks"))
	for _, h := range []string{"slow", "triage", "nightly-backup", "disk-space", "cron 0 3 * * *"} {
		if !strings.Contains(names, h) {
			t.Errorf("the hooks page does not show %q:\n%s", h, names)
		}
	}

	// The run list, live: a run fired elsewhere appears, running, and
	// then finishes, without a reload (a reload would clear the mark).
	doBrowser(t, ctx, "open the run list",
		chromedp.Navigate(base+"/runs"),
		chromedp.WaitVisible(chromedp.CSS("table.runs")),
		waitRefreshed,
		chromedp.Evaluate[chromedp.Void](`window.hookdMark = "still here"`),
	)
	id := runID(t, e.must(0, "fire", "slow"))
	row := fmt.Sprintf(`document.getElementById("run-%s")`, id)
	doBrowser(t, ctx, "see the run appear, running",
		waitJS(row+` !== null && `+row+`.dataset.status === "running"`))
	// Meanwhile, in a second tab, the run's page shows its progress: the
	// first step done, the second running; then the outcome, live.
	tab, cancelTab := chromedp.NewContext(ctx)
	defer cancelTab()
	// The first call on a context opens its tab, which lives as long as
	// that call's context: no timeout on it.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a second tab: %v", err)
	}
	doBrowser(t, tab, "open the running run",
		chromedp.Navigate(base+"/runs/"+id),
		waitRefreshed,
		chromedp.WaitVisible(chromedp.ID("current-step")),
	)
	progress := readBrowser(t, tab, "read the progress", textOf("#progress"))
	if !strings.Contains(progress, "step_0 (first)") || !strings.Contains(progress, "step_1 (wait)") || !strings.Contains(progress, "so far") {
		t.Errorf("the running run's page shows no progress:\n%s", progress)
	}
	// The page follows the run's live output: a line the step writes
	// once the page follows it shows while the step runs.
	doBrowser(t, tab, "follow the live output",
		waitJS(`document.body.dataset.liveOutput === "open"`))
	e.write("show", "")
	doBrowser(t, tab, "see the step's output live",
		waitJS(`document.getElementById("live-output") !== null && document.getElementById("live-output").textContent.indexOf("step_1 (wait) | live-line-of-wait") >= 0`))
	e.write("release", "")
	doBrowser(t, ctx, "see the run finish",
		waitJS(row+` !== null && `+row+`.dataset.status === "completed"`))
	doBrowser(t, tab, "see the run's page finish",
		waitJS(`document.getElementById("status").textContent.indexOf("completed") >= 0`),
		chromedp.WaitVisible(chromedp.ID("steps")),
	)
	if steps := readBrowser(t, tab, "read the steps", textOf("#steps")); !strings.Contains(steps, "released") {
		t.Errorf("the finished run's page does not show the step's output:\n%s", steps)
	}
	cancelTab()
	if mark := readBrowser(t, ctx, "check for a reload", chromedp.Evaluate[string](`window.hookdMark || ""`)); mark != "still here" {
		t.Errorf("the run list reloaded instead of updating in place")
	}

	// Fire the model hook from its row, with an event: to its run's page,
	// which shows the outcome, the steps and the transcript.
	doBrowser(t, ctx, "fire triage",
		chromedp.Navigate(base+"/hooks"),
		waitRefreshed,
		chromedp.Click(chromedp.CSS("#hook-triage details.fire summary")),
		chromedp.SendKeys(chromedp.CSS("#hook-triage textarea"), `{"who": "the browser"}`),
		chromedp.Click(chromedp.CSS("#hook-triage .fire-button")),
		chromedp.WaitVisible(chromedp.ID("outcome")),
		waitJS(`document.getElementById("status").textContent.indexOf("completed") >= 0`),
		chromedp.WaitVisible(chromedp.ID("transcript")),
	)
	loc := readBrowser(t, ctx, "read the run's address", chromedp.Location())
	outcome := readBrowser(t, ctx, "read the outcome", textOf("#outcome"))
	steps := readBrowser(t, ctx, "read the steps", textOf("#steps"))
	transcript := readBrowser(t, ctx, "read the transcript", textOf("#transcript"))
	if !strings.Contains(outcome, "The notes say all is well.") {
		t.Errorf("the outcome does not show the answer:\n%s", outcome)
	}
	if !strings.Contains(steps, "event from the browser") {
		t.Errorf("the steps do not show the step's output:\n%s", steps)
	}
	for _, want := range []string{"read_file", `{"path":"notes.txt"}`, "all is well", "test-model"} {
		if !strings.Contains(transcript, want) {
			t.Errorf("the transcript does not show %q:\n%s", want, transcript)
		}
	}
	if runs := e.listRuns("triage", "--limit", "1"); len(runs) != 1 || runs[0].Trigger != "manual" || !strings.HasSuffix(loc, "/runs/"+runs[0].ID) {
		t.Errorf("the browser is at %s; the latest run of triage: %+v", loc, runs)
	}

	// Pause a hook from its row.
	doBrowser(t, ctx, "pause nightly-backup",
		chromedp.Navigate(base+"/hooks"),
		waitRefreshed,
		chromedp.Click(chromedp.CSS("#hook-nightly-backup .pause-button")),
		chromedp.WaitVisible(chromedp.CSS("#hook-nightly-backup .resume-button")),
	)
	if l := e.must(0, "list"); !strings.Contains(l.stdout, "paused") {
		t.Errorf("hookd list after the pause in the browser:\n%s", l.stdout)
	}

	// The overview draws the day's runs on its timeline.
	doBrowser(t, ctx, "render the overview",
		chromedp.EmulateViewport(1000, 400),
		chromedp.Navigate(base+"/"),
		waitRefreshed,
		chromedp.WaitVisible(chromedp.CSS("svg.timeline")),
	)
	bars := readBrowser(t, ctx, "count the timeline's runs",
		chromedp.Evaluate[int](`document.querySelectorAll("svg.timeline rect[class^='st-']").length`))
	shot := readBrowser(t, ctx, "take a screenshot", chromedp.CaptureScreenshot())
	if bars < 50 {
		t.Errorf("the timeline draws %d runs, want the ~100 of the day", bars)
	}
	// The day's failed runs are listed under it, the latest first.
	failures := readBrowser(t, ctx, "read the recent failures",
		chromedp.Evaluate[[]string](`[...document.querySelectorAll("#failures tr.failure td:first-child a")].map(a => a.textContent)`))
	if len(failures) == 0 || len(failures) > 5 || !strings.HasPrefix(failures[0], "seed") {
		t.Errorf("the overview's recent failures: %q, want 1 to 5 of the seeded failed runs", failures)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("decode the screenshot: %v", err)
	}
	if colours := distinctColours(img); colours < 8 {
		t.Errorf("the screenshot has %d colours: the page did not render", colours)
	}
	if *updateScreenshot || os.Getenv("HOOKD_UPDATE_SCREENSHOT") == "1" {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote docs/dashboard.png (%d bytes)", len(shot))
	}
}

// distinctColours counts the colours of an image, up to 1000.
func distinctColours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			if len(seen) >= 1000 {
				return len(seen)
			}
		}
	}
	return len(seen)
}
