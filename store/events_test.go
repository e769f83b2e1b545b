package store

import (
	"context"
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
