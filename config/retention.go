package config

import (
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/human"
	"gopkg.in/yaml.v3"
)

// Default retention (retention: in hookd.yaml).
const (
	DefaultRetainRuns    = 30 * 24 * time.Hour
	DefaultKeepLast      = 100
	DefaultRetainEvents  = 7 * 24 * time.Hour
	DefaultRetainSkipped = 3 * 24 * time.Hour
	DefaultPruneEvery    = time.Hour
)

var (
	daemonRetentionKeys = []string{"runs", "keep_last", "events", "skipped", "every"}
	hookRetentionKeys   = []string{"runs", "keep_last"}
)

// defaultRetention is the retention hookd.yaml starts from.
func defaultRetention() engine.Retention {
	return engine.Retention{Runs: DefaultRetainRuns, KeepLast: DefaultKeepLast, Events: DefaultRetainEvents, Skipped: DefaultRetainSkipped}
}

// retention decodes the daemon's retention: and how often it prunes.
func (s *state) retention(n *yaml.Node, path string, r *engine.Retention, every *time.Duration) {
	f := s.fields(n, path, daemonRetentionKeys, nil)
	s.age(f, "runs", &r.Runs)
	s.keepLast(f, &r.KeepLast)
	s.age(f, "events", &r.Events)
	s.age(f, "skipped", &r.Skipped)
	if v, ok := f.decode("every", every); ok {
		positive(s, v, join(path, "every"), *every)
	}
}

// hookRetention decodes a hook's retention:, which may set its runs and
// keep_last; the rest is daemon-wide.
func (s *state) hookRetention(n *yaml.Node, path string, r *engine.HookRetention) {
	f := s.fields(n, path, hookRetentionKeys, nil)
	var runs time.Duration
	if s.age(f, "runs", &runs) {
		r.Runs = &runs
	}
	var keep int
	if s.keepLast(f, &keep) {
		r.KeepLast = &keep
	}
}

func (s *state) keepLast(f *fields, dst *int) bool {
	n, ok := f.decode("keep_last", dst)
	if ok {
		nonNegative(s, n, join(f.path, "keep_last"), *dst)
	}
	return ok
}

// age decodes an age of records: a Go duration, or whole days ("30d",
// also "1d12h"); 0 keeps records forever. It reports whether key was
// given and valid.
func (s *state) age(f *fields, key string, dst *time.Duration) bool {
	n := f.get(key)
	if n == nil {
		return false
	}
	path := join(f.path, key)
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		if n.Value == "0" {
			*dst = 0
			return true
		}
		s.errorf(n, path, "an age needs a unit: write %sd or %sh, not %s", n.Value, n.Value, n.Value)
		return false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		s.errorf(n, path, "expected an age like 30d or 12h (0 keeps forever), got %s", describe(n))
		return false
	}
	d, err := human.ParseAge(n.Value)
	if err != nil {
		s.errorf(n, path, "bad age %q (want a number with a unit: 30d, 12h, 90m; 0 keeps forever)", n.Value)
		return false
	}
	if d < 0 {
		s.errorf(n, path, "must be >= 0 (got %s)", n.Value)
		return false
	}
	*dst = d
	return true
}
