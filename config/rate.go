package config

import (
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"gopkg.in/yaml.v3"
)

// rate decodes a hook's rate: N/DURATION (10/1h: at most 10 starts in
// any hour).
func (s *state) rate(n *yaml.Node, path string, r *engine.Rate) {
	var text string
	if !s.decodeAt(n, path, &text) {
		return
	}
	num, per, ok := strings.Cut(strings.TrimSpace(text), "/")
	count, err := strconv.Atoi(strings.TrimSpace(num))
	window, derr := time.ParseDuration(strings.TrimSpace(per))
	switch {
	case !ok || err != nil || derr != nil:
		s.errorf(n, path, "must be N/DURATION, like 10/1h: at most N starts in any DURATION (got %q)", text)
	case count < 1:
		s.errorf(n, path, "the count must be >= 1 (got %d)", count)
	case window <= 0:
		s.errorf(n, path, "the window must be > 0 (got %s)", strings.TrimSpace(per))
	default:
		*r = engine.Rate{N: count, Window: window}
	}
}
