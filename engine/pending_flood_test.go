package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// TestPendingPayloadBounded performs an event flood on a hook with
// overlap: queue whose run is in flight: events, each with a key of its
// own and 20 KB of data, coalesce into the pending rerun. Merged (later
// keys win) without a bound, its payload grew by each (400 of 10 KB made
// 4 MB, in 21 s of merging in the loop), and every
// merge decoded and encoded all of it in the engine loop and wrote it to
// the database. Past 1 MiB the later payload replaces the pending one's:
// the pending run's payload stays within 1 MiB and one event, it says so
// in its notes, and it still runs with the latest event's data.
//
// The default run floods 10 events of 150 KB: the payload passes 1 MiB at
// the 7th, which replaces it, and the 3 after it merge again. Under
// HOOKD_TEST_LONG=1 it floods 60 events of 20 KB, many small merges up to
// the bound (the flood of the report), which cost ~6 times the CPU.
func TestPendingPayloadBounded(t *testing.T) {
	t.Parallel()
	events, size := 10, 150<<10
	if testtool.Long() {
		events, size = 60, 20<<10
	}
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		h := withSteps(newHook("q"), block)
		h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "flood.*"}
		h.Overlap = engine.OverlapQueue
		hs := newHarness(t, []*engine.Hook{h})
		defer hs.stop()
		ctx := context.Background()
		big := strings.Repeat("x", size)
		var pending *engine.Run
		for i := 0; i < events; i++ {
			runs, err := hs.eng.Emit(ctx, &engine.Event{Type: "flood.x", Data: map[string]any{fmt.Sprintf("k%d", i): big, "last": i}})
			if err != nil {
				t.Fatalf("emit %d: %v", i, err)
			}
			if i > 0 && len(runs) == 1 {
				pending = runs[0]
			}
		}
		hs.settle()
		if pending == nil {
			t.Fatal("no pending run")
		}
		r := hs.run(pending.ID)
		if n := len(r.Event); n > 1<<20+size+1<<10 {
			t.Errorf("the pending run's payload is %d bytes after %d events of %d KB", n, events, size>>10)
		}
		if !strings.Contains(string(r.Event), fmt.Sprintf(`"last":%d`, events-1)) {
			t.Errorf("the pending payload lost the latest event's data: %.200s", r.Event)
		}
		close(block.release)
		hs.settle()
		if r = hs.run(pending.ID); r.Status != engine.StatusCompleted || !strings.Contains(strings.Join(r.Notes, "\n"), "replaced") {
			t.Errorf("pending run %s: notes %q; want it completed, saying the payloads were replaced", r.Status, r.Notes)
		}
	})
}
