package store

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/hookd/hookd/engine"
)

func TestAppendEvent(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)

	ev := &engine.Event{ID: "client-1", Type: "deploy.failed", Data: map[string]any{"env": "prod", "n": float64(3),
		"nested": map[string]any{"ok": false}}, Source: "cli", Time: t0, Depth: 1}
	mustRun(t, d.AppendEvent(ctx, ev))
	if ev.Seq == 0 {
		t.Fatal("AppendEvent did not set Seq")
	}
	first := ev.Seq

	// Publishing the same id again is idempotent: same seq, nothing stored.
	again := &engine.Event{ID: "client-1", Type: "deploy.failed", Data: map[string]any{"other": true}}
	err := d.AppendEvent(ctx, again)
	if !errors.Is(err, engine.ErrDuplicateEvent) {
		t.Fatalf("second AppendEvent: %v, want ErrDuplicateEvent", err)
	}
	if again.Seq != first {
		t.Errorf("duplicate Seq = %d, want %d", again.Seq, first)
	}

	// An event without an id gets one.
	anon := &engine.Event{Type: "hook.run.completed", Source: "engine"}
	mustRun(t, d.AppendEvent(ctx, anon))
	if len(anon.ID) != 26 || anon.Seq <= first {
		t.Errorf("generated id %q seq %d", anon.ID, anon.Seq)
	}
	mustRun(t, d.AppendEvent(ctx, &engine.Event{Type: "deploy.failed", Source: "api"}))

	if err := d.AppendEvent(ctx, &engine.Event{ID: "x"}); err == nil {
		t.Error("AppendEvent without a type succeeded")
	}

	all, err := d.ListEvents(ctx, "", 0)
	mustRun(t, err)
	if len(all) != 3 || all[0].Source != "api" || all[2].ID != "client-1" {
		t.Fatalf("ListEvents(all) = %+v", all)
	}
	if !reflect.DeepEqual(all[2], ev) {
		t.Errorf("round trip:\n got %+v\nwant %+v", all[2], ev)
	}
	if len(all[1].Data) != 0 || !all[1].Time.IsZero() {
		t.Errorf("event without data or time read back as %+v", all[1])
	}

	tests := []struct {
		typ   string
		limit int
		want  []string // sources, newest first
	}{
		{"deploy.failed", 0, []string{"api", "cli"}},
		{"deploy.failed", 1, []string{"api"}},
		{"hook.run.completed", 10, []string{"engine"}},
		{"deploy", 10, nil},
		{"", 2, []string{"api", "engine"}},
	}
	for _, tt := range tests {
		evs, err := d.ListEvents(ctx, tt.typ, tt.limit)
		mustRun(t, err)
		var got []string
		for _, e := range evs {
			got = append(got, e.Source)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ListEvents(%q, %d) = %v, want %v", tt.typ, tt.limit, got, tt.want)
		}
	}
}

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
