package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/hookd/hookd/engine"
)

func testRunIDsWithPrefix(t *testing.T, e *env) {
	s := e.store()
	ctx := context.Background()
	for _, id := range []string{"01AAA1", "01AAA2", "01AAB1", "01B"} {
		if err := s.InsertRun(ctx, &engine.Run{ID: id, Hook: "h", Status: engine.StatusSkipped, QueuedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	for prefix, want := range map[string]string{
		"01AAA": "[01AAA1 01AAA2]", "01AAB": "[01AAB1]", "01A": "[01AAA1 01AAA2 01AAB1]", "01C": "[]", "01AAA2": "[01AAA2]",
	} {
		ids, err := s.RunIDsWithPrefix(ctx, prefix, 10)
		if err != nil || fmt.Sprint(ids) != want {
			t.Errorf("prefix %s: %v %v, want %s", prefix, ids, err, want)
		}
	}
	if ids, _ := s.RunIDsWithPrefix(ctx, "01", 2); len(ids) != 2 {
		t.Errorf("limit 2: %v", ids)
	}
}
