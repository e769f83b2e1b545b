package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// lastCellLines measures, in the browser, each hook row's Last cell:
// how many lines its text takes (the height its content's boxes span,
// over the cell's line height, rounded) and how many boxes the time in
// it was laid out in (a time broken across lines has more than one).
const lastCellLines = `[...document.querySelectorAll("table.hooks tbody tr[data-hook]")].map(tr => {
	const td = tr.querySelector("td.last");
	if (!td) { return tr.dataset.hook + ": no td.last"; }
	const r = document.createRange();
	r.selectNodeContents(td);
	const boxes = [...r.getClientRects()].filter(b => b.width > 0 && b.height > 0);
	const top = Math.min(...boxes.map(b => b.top)), bottom = Math.max(...boxes.map(b => b.bottom));
	const lh = parseFloat(getComputedStyle(td).lineHeight);
	const t = td.querySelector("time");
	return tr.dataset.hook + ": lines=" + Math.round((bottom - top) / lh) +
		" time_boxes=" + (t ? t.getClientRects().length : 0) + " text=" + JSON.stringify(td.innerText);
})`

// TestBrowserHooksLastColumn: the Last column of the hooks page shows
// the latest run's status and when it started on one line, at a laptop's
// width (1280 px) and a narrow window's (800 px): the time is a short
// relative one ("3m ago"), with the full date in its title, and never
// breaks inside. Before, the cell held "2026-11-29 12:50:20 UTC (3m
// ago)" and wrapped in the middle of it at 800 px.
func TestBrowserHooksLastColumn(t *testing.T) {
	ctx := newChromium(t)
	e := newEnv(t, "listen: 127.0.0.1:0\n", map[string]string{
		"nightly-backup-of-the-database.yaml": "trigger:\n  cron: \"0 3 * * *\"\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n",
		"disk-space.yaml":                     "trigger:\n  every: 6h\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n",
		"triage.yaml":                         "description: asks the model\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n",
	})
	e.environ = []string{"HOOKD_TOKEN=" + testToken}
	d := e.serve()
	base := "http://" + d.tcpAddr()
	for _, h := range []string{"disk-space", "nightly-backup-of-the-database", "triage"} {
		e.must(0, "fire", h, "--wait")
	}
	doBrowser(t, ctx, "log in",
		chromedp.Navigate(base+"/hooks"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("hook-triage")),
		waitRefreshed,
	)
	for _, width := range []int64{1280, 800} {
		doBrowser(t, ctx, fmt.Sprintf("view the hooks at %d px", width),
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(base+"/hooks"),
			chromedp.WaitVisible(chromedp.ID("hook-triage")),
			waitRefreshed,
		)
		cells := readBrowser(t, ctx, "measure the Last column", chromedp.Evaluate[[]string](lastCellLines))
		if len(cells) != 3 {
			t.Fatalf("at %d px: %d hook rows measured, want 3: %q", width, len(cells), cells)
		}
		for _, c := range cells {
			if !strings.Contains(c, " lines=1 time_boxes=1 ") {
				t.Errorf("at %d px the Last cell is not one line with a relative time: %s", width, c)
			}
		}
		title := readBrowser(t, ctx, "read the time's title", chromedp.Evaluate[string](
			`(document.querySelector("#hook-triage td.last time") || {}).title || ""`))
		if _, err := time.Parse("2006-01-02 15:04:05 MST", title); err != nil {
			t.Errorf("at %d px the Last time's title %q is not the full time: %v", width, title, err)
		}
	}
}
