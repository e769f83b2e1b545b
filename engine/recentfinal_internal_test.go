package engine

import (
	"strings"
	"testing"
	"time"
)

// TestRecordBytesCountsFieldsByTheirContent: a run's size for
// recentFinals counts its steps' field values by what they hold, through
// slices, maps and pointers of any type, and a value it cannot size (a
// struct) as too large, so no large record is held by mistake.
func TestRecordBytesCountsFieldsByTheirContent(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", recentMaxBytes)
	type file struct{ Path, Content string }
	n := 3
	for _, c := range []struct {
		name  string
		field any
		held  bool
	}{
		{"string", "ok", true},
		{"large string", big, false},
		{"int pointer", &n, true},
		{"typed slice of maps", []map[string]any{{"path": "a"}, {"content": big}}, false},
		{"string slice", []string{"a", big}, false},
		{"small typed slice", []map[string]string{{"path": "a"}}, true},
		{"nested any", map[string]any{"a": []any{map[string]any{"b": big}}}, false},
		{"struct", file{Path: "a"}, false},
		{"struct slice", []file{{Path: "a"}}, false},
		{"time", time.Second, true},
	} {
		run := &Run{Steps: []*StepResult{{Output: "o", Fields: map[string]any{"f": c.field}}}}
		if held := recordBytes(run) <= recentMaxBytes; held != c.held {
			t.Errorf("%s: held %t (%d bytes); want %t", c.name, held, recordBytes(run), c.held)
		}
	}
}
