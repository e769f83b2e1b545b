package notify

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestRedirectToAnotherOrigin: a webhook target that redirects to a second
// loopback server on another port (another origin) does not get the
// notification, or the webhook's URL as Referer, sent there; the
// notification is undeliverable at once (not retried), and the log names
// both origins but not the URL's secret path.
func TestRedirectToAnotherOrigin(t *testing.T) {
	var mu sync.Mutex
	var heard []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		heard = append(heard, r.Method+" "+r.URL.Path+" Referer="+r.Header.Get("Referer"))
		mu.Unlock()
	}))
	defer collector.Close()
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, collector.URL+"/collect", http.StatusTemporaryRedirect)
	}))
	defer hostile.Close()
	n, c, logs := newTest(t, Options{Attempts: 3, Targets: []engine.NotifyTarget{{URL: hostile.URL + "/hooks/s3cr3t"}}})
	n.Observe(failedEvent("h", "r1"))
	deadline := time.Now().Add(10 * time.Second)
	for c.get(Undeliverable)+c.get(Delivered) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 0 {
		t.Errorf("the other origin heard %q", heard)
	}
	if got := c.get(Undeliverable); got != 1 {
		t.Errorf("undeliverable: %d, want 1", got)
	}
	out := logs.String()
	for _, want := range []string{"refused a redirect", hostile.URL, collector.URL, "attempts=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cr3t") {
		t.Errorf("the log shows the webhook's URL:\n%s", out)
	}
}
