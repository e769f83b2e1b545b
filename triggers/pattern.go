package triggers

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/glob"
)

// Pattern segments with a meaning of their own.
const (
	anySegment  = "*"  // exactly one segment
	anySegments = "**" // one or more segments; last segment only
)

// ValidatePattern reports whether p is a valid event pattern: dot-separated
// segments, each "*", a final "**", or a literal of ASCII letters, digits,
// '_', '-' and ':'.
func ValidatePattern(p string) error {
	if p == "" {
		return errors.New("empty event pattern")
	}
	n := strings.Count(p, ".") + 1
	rest := p
	for i := 1; i <= n; i++ {
		seg, tail, _ := strings.Cut(rest, ".")
		rest = tail
		switch seg {
		case "":
			return fmt.Errorf("event pattern %q: segment %d is empty", p, i)
		case anySegment:
		case anySegments:
			if i != n {
				return fmt.Errorf("event pattern %q: ** may only be the last segment", p)
			}
		default:
			for _, r := range seg {
				if r == '*' {
					return fmt.Errorf("event pattern %q: a wildcard must be a whole segment (got %q)", p, seg)
				}
				if !literalRune(r) {
					return fmt.Errorf("event pattern %q: segment %q: invalid character %q (want letters, digits, '_', '-', ':')", p, seg, r)
				}
			}
		}
	}
	return nil
}

func literalRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '_' || r == '-' || r == ':'
}

// MatchPattern reports whether the valid pattern p matches the event type
// typ, as an event trigger does: "*" is exactly one segment, a final "**"
// one or more (glob.Dot; EventIndex matches alike).
func MatchPattern(p, typ string) bool {
	ok, _ := glob.Match(p, typ, glob.Dot)
	return ok
}

// wildcard reports whether the valid pattern p has a wildcard segment.
func wildcard(p string) bool { return strings.Contains(p, "*") }

// ProgressOnly reports whether the valid pattern p can only match the
// engine's progress events (hook.step.*, hook.llm.*, hook.tool.called),
// which are never dispatched to hooks (engine.ProgressEventType): an
// event trigger with such a pattern would never fire.
func ProgressOnly(p string) bool {
	if p == engine.EventToolCalled {
		return true
	}
	return strings.HasPrefix(p, "hook.step.") || strings.HasPrefix(p, "hook.llm.") || p == "hook.step" || p == "hook.llm"
}
