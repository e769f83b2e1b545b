package backoff

import (
	"net/http"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	hook := Policy{Base: 30 * time.Second, Max: 10 * time.Minute, Jitter: 0.2}
	model := Policy{Base: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: 0.5}
	webhook := Policy{Base: time.Second, Max: time.Minute}
	for _, c := range []struct {
		p    Policy
		n    int
		j    float64
		want time.Duration
	}{
		{hook, 1, 0, 30 * time.Second},
		{hook, 2, 0, time.Minute},
		{hook, 5, 0, 8 * time.Minute},
		{hook, 6, 0, 10 * time.Minute}, // 16m, capped
		{hook, 60, 0, 10 * time.Minute},
		{hook, 1, 0.5, 27 * time.Second}, // a tenth less
		{hook, 1, 0.999999, 24*time.Second + 6*time.Microsecond},
		{model, 1, 0, 500 * time.Millisecond},
		{model, 1, 0.5, 375 * time.Millisecond},
		{model, 3, 0, 2 * time.Second},
		{model, 10, 0, 30 * time.Second},
		{webhook, 1, 0.9, time.Second}, // no jitter
		{webhook, 7, 0, time.Minute},
		{Policy{Base: time.Second, Max: time.Second}, 3, 0, time.Second},
	} {
		if got := c.p.Delay(c.n, c.j); got != c.want {
			t.Errorf("%+v.Delay(%d, %v) = %s, want %s", c.p, c.n, c.j, got, c.want)
		}
	}
}

// FuzzDelay: a wait is never more than Max nor less than what jitter may
// leave of it, and never shrinks from one retry to the next without
// jitter.
func FuzzDelay(f *testing.F) {
	f.Add(int64(time.Second), int64(time.Minute), 0.2, 3, 0.5)
	f.Add(int64(1), int64(1<<62), 1.0, 100, 0.999)
	f.Fuzz(func(t *testing.T, base, maxd int64, jitter float64, n int, j float64) {
		if base <= 0 || maxd < base || !(jitter >= 0 && jitter <= 1) || n < 1 || n > 1000 || !(j >= 0 && j < 1) {
			return
		}
		p := Policy{Base: time.Duration(base), Max: time.Duration(maxd), Jitter: jitter}
		full := p.Delay(n, 0)
		if full < p.Base || full > p.Max {
			t.Fatalf("%+v.Delay(%d, 0) = %s, outside [Base, Max]", p, n, full)
		}
		if next := p.Delay(n+1, 0); next < full {
			t.Fatalf("%+v: retry %d waits %s, less than retry %d's %s", p, n+1, next, n, full)
		}
		got := p.Delay(n, j)
		if got > full || float64(got) < float64(full)*(1-jitter)-1 {
			t.Fatalf("%+v.Delay(%d, %v) = %s, outside [%s less %v of it, %s]", p, n, j, got, full, jitter, full)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	for _, c := range []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "120"}, 2 * time.Minute, true},
		{"zero seconds", map[string]string{"Retry-After": "0"}, 0, true},
		{"fraction", map[string]string{"Retry-After": " 1.5 "}, 1500 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": date(90 * time.Second)}, 90 * time.Second, true},
		{"rfc 850 date", map[string]string{"Retry-After": now.Add(time.Minute).Format(time.RFC850)}, time.Minute, true},
		{"asctime date", map[string]string{"Retry-After": now.Add(time.Hour).Format(time.ANSIC)}, time.Hour, true},
		{"date passed", map[string]string{"Retry-After": date(-time.Hour)}, 0, true},
		{"ms", map[string]string{"Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{"ms wins", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{"bad ms, seconds", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "9"}, 9 * time.Second, true},
		{"negative", map[string]string{"Retry-After": "-5"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "later"}, 0, false},
		{"infinite", map[string]string{"Retry-After": "Inf"}, 0, false},
		{"not a number", map[string]string{"Retry-After": "NaN"}, 0, false},
		{"too long", map[string]string{"Retry-After": "1e300"}, 0, false},
	} {
		h := http.Header{}
		for k, v := range c.header {
			h.Set(k, v)
		}
		if c.header == nil {
			h = nil
		}
		got, ok := RetryAfter(h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: RetryAfter = %s, %v; want %s, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// FuzzRetryAfter: no header value yields a negative wait.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "1.5", "Wed, 21 Oct 2026 07:28:00 GMT", "-1", "1e300", "Inf"} {
		f.Add(s, "")
	}
	f.Add("", "250")
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{}
		h.Set("Retry-After", ra)
		h.Set("Retry-After-Ms", ms)
		if got, ok := RetryAfter(h, time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)); got < 0 || !ok && got != 0 {
			t.Fatalf("RetryAfter(%q, ms %q) = %s, %v", ra, ms, got, ok)
		}
	})
}
