package main

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserStreamEndsAtLogout: in a real Chromium, a page's EventSource
// on /v1/stream (with the session cookie) receives events; logging out in
// another tab of the same browser ends that stream: the server closes it,
// the EventSource's reconnect is refused (401) and it stays closed
// (readyState 2), receiving nothing more. Before, it stayed open and kept
// receiving events after the logout.
func TestBrowserStreamEndsAtLogout(t *testing.T) {
	ctx := newChromium(t)
	e := newEnv(t, "listen: 127.0.0.1:0\n", dashHooks)
	e.environ = []string{"HOOKD_TOKEN=" + testToken, "MY_SECRET=" + hookSecret}
	d := e.serve()
	base := "http://" + d.tcpAddr()

	doBrowser(t, ctx, "log in",
		chromedp.Navigate(base+"/runs"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.CSS("table.runs")),
		chromedp.Evaluate[chromedp.Void](`window.got = 0;
			window.es = new EventSource("/v1/stream?type=deploy.*");
			window.es.onmessage = function () { window.got++; };`),
		waitJS(`window.es.readyState === 1`),
	)
	e.must(0, "emit", "deploy.finished", "who=before")
	doBrowser(t, ctx, "receive an event", waitJS(`window.got === 1`))

	// Log out in a second tab: the first keeps its page and its stream.
	tab, cancelTab := chromedp.NewContext(ctx)
	defer cancelTab()
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a second tab: %v", err)
	}
	doBrowser(t, tab, "log out",
		chromedp.Navigate(base+"/hooks"),
		chromedp.WaitVisible(chromedp.CSS("form.logout button")),
		chromedp.Click(chromedp.CSS("form.logout button")),
		chromedp.WaitVisible(chromedp.ID("token")),
	)
	doBrowser(t, ctx, "see the stream end", waitJS(`window.es.readyState === 2`))
	e.must(0, "emit", "deploy.finished", "who=after")
	if got := readBrowser(t, ctx, "count the events", chromedp.Evaluate[int](`window.got`)); got != 1 {
		t.Errorf("the page received %d events, want the 1 before the logout", got)
	}
}
