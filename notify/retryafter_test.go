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

// TestRetryAfterForms: a webhook that answers 429 with Retry-After is
// tried again after the wait it asks for, whether it writes the wait as
// delay-seconds or as an HTTP date. The backoff (1ms) is far shorter and
// max_backoff (1s) caps the wait, so the logged wait is 1s exactly when
// the header was read and 1ms when it was not.
func TestRetryAfterForms(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		value func() string
	}{
		{"seconds", func() string { return "30" }},
		{"http date", func() string { return time.Now().Add(time.Minute).UTC().Format(http.TimeFormat) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each waits max_backoff, 1s
			var mu sync.Mutex
			tries := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				tries++
				if tries == 1 {
					w.Header().Set("Retry-After", c.value())
					w.WriteHeader(http.StatusTooManyRequests)
				}
			}))
			defer srv.Close()
			n, cnt, logs := newTest(t, Options{MaxBackoff: time.Second, Targets: []engine.NotifyTarget{{URL: srv.URL, Format: "generic"}}})
			n.Observe(failedEvent("h", "r1"))
			waitCount(t, cnt, Delivered, 1)
			if !strings.Contains(logs.String(), "in=1s ") {
				t.Errorf("the retry did not wait as Retry-After asked (capped at max_backoff, 1s):\n%s", logs)
			}
		})
	}
}
