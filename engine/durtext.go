package engine

import (
	"time"

	"github.com/hookd/hookd/internal/human"
)

// DurationText is human.Exact: a configured duration in words, exactly
// (10m, 1h30s). It stays for cmd/hookd until the CLI calls human itself.
func DurationText(d time.Duration) string { return human.Exact(d) }

// ElapsedText is human.Duration: a measured duration rounded to what a
// person reads (340ms, 1.2s, 3m5s, 2h14m). It stays for cmd/hookd until
// the CLI calls human itself.
func ElapsedText(d time.Duration) string { return human.Duration(d) }
