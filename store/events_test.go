package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/hookd/hookd/engine"
)

func TestAppendEventsBatch(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	if err := d.AppendEvent(ctx, &engine.Event{ID: "seen", Type: "a"}); err != nil {
		t.Fatal(err)
	}
	evs := []*engine.Event{{Type: "b"}, {ID: "seen", Type: "a"}, {Type: "c", Data: map[string]any{"k": 1.0}}}
	if err := d.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if evs[0].Seq == 0 || evs[2].Seq <= evs[0].Seq || evs[1].Seq != 1 {
		t.Errorf("seqs = %d %d %d", evs[0].Seq, evs[1].Seq, evs[2].Seq)
	}
	got, err := d.ListEvents(ctx, "", 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("stored %d events (%v), want 3", len(got), err)
	}
	if err := d.AppendEvents(ctx, []*engine.Event{{Type: "d"}, {Type: ""}}); err == nil {
		t.Error("a batch with a bad event was stored")
	}
	if got, _ := d.ListEvents(ctx, "", 10); len(got) != 3 {
		t.Errorf("a failed batch stored %d events", len(got)-3)
	}
}

// TestAppendEventsChunks stores batches that take several multi-row
// inserts (eventChunks), with IDs stored before and repeated within the
// batch, after retention deleted the latest events: every event's Seq is
// the seq its ID is stored with, the new ones in batch order, above every
// seq the table held, and each stored event has its own data.
func TestAppendEventsChunks(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	seen := &engine.Event{ID: "seen", Type: "a"}
	mustRun(t, d.AppendEvent(ctx, seen))
	mustRun(t, d.AppendEvents(ctx, []*engine.Event{{ID: "gone1", Type: "g"}, {ID: "gone2", Type: "g"}}))
	if _, err := d.w.Exec(`DELETE FROM events WHERE type = 'g'`); err != nil { // a seq is never reused
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3, 4, 7, 16, 31, 37} {
		for _, dups := range []bool{false, true} {
			var evs []*engine.Event
			copyOf := map[int]int{} // event i repeats the ID of event copyOf[i] of the batch
			for i := range n {
				ev := &engine.Event{Type: fmt.Sprintf("t%d", i%3), Data: map[string]any{"i": float64(i), "n": float64(n)}}
				if dups && i%5 == 2 {
					ev = &engine.Event{ID: "seen", Type: "a"}
				}
				if dups && i%7 == 3 && i > 0 { // the ID of an earlier event of this batch
					ev = &engine.Event{ID: evs[i-1].ID, Type: "x"}
					if ev.ID == "" {
						ev.ID = fmt.Sprintf("in-batch-%d-%d", n, i)
						evs[i-1].ID = ev.ID
					}
					copyOf[i] = i - 1
				}
				evs = append(evs, ev)
			}
			before, err := d.LastEventSeq(ctx)
			mustRun(t, err)
			mustRun(t, d.AppendEvents(ctx, evs))
			last := before
			for i, ev := range evs {
				var id, typ, data string
				if err := d.r.QueryRow(`SELECT id, type, data FROM events WHERE seq = ?`, ev.Seq).Scan(&id, &typ, &data); err != nil {
					t.Fatalf("n=%d dups=%v: event %d (%s) has seq %d, which holds nothing: %v", n, dups, i, ev.ID, ev.Seq, err)
				}
				if id != ev.ID {
					t.Fatalf("n=%d dups=%v: event %d (%s) has seq %d, which holds %s", n, dups, i, ev.ID, ev.Seq, id)
				}
				if j, ok := copyOf[i]; ok {
					if ev.Seq != evs[j].Seq {
						t.Errorf("n=%d: event %d repeats %s: seq %d, want %d", n, i, ev.ID, ev.Seq, evs[j].Seq)
					}
				} else if ev.Seq > before { // stored by this batch
					if ev.Seq <= last || typ != ev.Type || data != fmt.Sprintf(`{"i":%d,"n":%d}`, i, n) {
						t.Errorf("n=%d dups=%v: event %d: seq %d after %d, %s %s", n, dups, i, ev.Seq, last, typ, data)
					}
					last = ev.Seq
				} else if ev.ID != "seen" {
					t.Errorf("n=%d dups=%v: event %d (%s) got old seq %d", n, dups, i, ev.ID, ev.Seq)
				}
			}
			if ev := evs[len(evs)-1]; ev.ID == "seen" && ev.Seq != seen.Seq {
				t.Errorf("n=%d: the duplicate of seen has seq %d, want %d", n, ev.Seq, seen.Seq)
			}
		}
	}
}
