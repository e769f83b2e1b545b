package store

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

func TestWatchSnapshots(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	if _, ok, err := d.LoadSnapshot(ctx, "h"); err != nil || ok {
		t.Fatalf("no snapshot yet: ok=%v err=%v", ok, err)
	}
	// An empty tree is a snapshot too.
	mustRun(t, d.SaveSnapshot(ctx, "h", nil))
	if files, ok, err := d.LoadSnapshot(ctx, "h"); err != nil || !ok || len(files) != 0 {
		t.Fatalf("empty snapshot: %v %v %v", files, ok, err)
	}
	mt := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	want := map[string]engine.FileStamp{"/a": {Size: 1, ModTime: mt}, "/b": {Size: 2, ModTime: mt.Add(time.Second)}}
	mustRun(t, d.SaveSnapshot(ctx, "h", want))
	mustRun(t, d.SaveSnapshot(ctx, "other", map[string]engine.FileStamp{"/x": {}}))
	files, ok, err := d.LoadSnapshot(ctx, "h")
	if err != nil || !ok || !maps.Equal(files, want) {
		t.Fatalf("snapshot = %v %v %v, want %v", files, ok, err, want)
	}

	mustRun(t, d.UpdateSnapshot(ctx, "h", map[string]engine.FileStamp{"/b": {Size: 3, ModTime: mt}, "/c": {Size: 4}}, []string{"/a"}))
	files, _, _ = d.LoadSnapshot(ctx, "h")
	want = map[string]engine.FileStamp{"/b": {Size: 3, ModTime: mt}, "/c": {Size: 4}}
	if !maps.Equal(files, want) {
		t.Fatalf("after update: %v, want %v", files, want)
	}
	// Replacing drops what is not given.
	mustRun(t, d.SaveSnapshot(ctx, "h", map[string]engine.FileStamp{"/d": {Size: 5}}))
	if files, _, _ = d.LoadSnapshot(ctx, "h"); len(files) != 1 {
		t.Fatalf("after save: %v", files)
	}
	// An update creates the snapshot when there is none.
	mustRun(t, d.UpdateSnapshot(ctx, "new", map[string]engine.FileStamp{"/n": {Size: 1}}, nil))
	if files, ok, _ := d.LoadSnapshot(ctx, "new"); !ok || len(files) != 1 {
		t.Fatalf("update without a snapshot: %v %v", files, ok)
	}
	mustRun(t, d.DeleteSnapshot(ctx, "h"))
	if _, ok, _ := d.LoadSnapshot(ctx, "h"); ok {
		t.Error("deleted snapshot still there")
	}
	if files, ok, _ := d.LoadSnapshot(ctx, "other"); !ok || len(files) != 1 {
		t.Errorf("another hook's snapshot: %v %v", files, ok)
	}
}
