package triggers

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestCoalesceRules: the changes of a window that joins a pending run are
// combined with the pending ones by the window's rules.
func TestCoalesceRules(t *testing.T) {
	ch := func(p, op string) Change { return Change{Path: p, Op: op} }
	mv := func(from, to string) Change { return Change{Path: to, OldPath: from, Op: engine.OpRenamed} }
	tests := []struct {
		name           string
		earlier, later []Change
		want           []Change
	}{
		{"created then modified is created", []Change{ch("/a", "created")}, []Change{ch("/a", "modified")}, []Change{ch("/a", "created")}},
		{"created then deleted is nothing", []Change{ch("/a", "created")}, []Change{ch("/a", "deleted")}, nil},
		{"modified then deleted is deleted", []Change{ch("/a", "modified")}, []Change{ch("/a", "deleted")}, []Change{ch("/a", "deleted")}},
		{"deleted then created is modified", []Change{ch("/a", "deleted")}, []Change{ch("/a", "created")}, []Change{ch("/a", "modified")}},
		{"modified twice is modified", []Change{ch("/a", "modified")}, []Change{ch("/a", "modified")}, []Change{ch("/a", "modified")}},
		{"other paths are kept, sorted", []Change{ch("/c", "modified")}, []Change{ch("/b", "created")}, []Change{ch("/b", "created"), ch("/c", "modified")}},
		{"renamed then modified is renamed", []Change{mv("/a", "/b")}, []Change{ch("/b", "modified")}, []Change{mv("/a", "/b")}},
		{"created then renamed is created", []Change{ch("/a", "created")}, []Change{mv("/a", "/b")}, []Change{ch("/b", "created")}},
		{"renamed then deleted deletes the old name", []Change{mv("/a", "/b")}, []Change{ch("/b", "deleted")}, []Change{ch("/a", "deleted")}},
		{"renamed later", []Change{ch("/x", "modified")}, []Change{mv("/a", "/b")}, []Change{mv("/a", "/b"), ch("/x", "modified")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := coalesce(tt.earlier, tt.later)
			for i := range got {
				got[i].seq = 0
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestMergeIntoPayload: the Merge of a watch event builds the payload of
// the merged list as a window's event has it, keeps the pending
// payload's other keys, and for a file watch puts the latest change's
// fields at the top.
func TestMergeIntoPayload(t *testing.T) {
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later := []Change{
		{Path: "/w/b.md", Op: engine.OpModified, Size: 7, ModTime: mtime, seq: 2},
		{Path: "/w/c.md", Op: engine.OpDeleted, seq: 1},
	}
	ev := watchEvent("h", later, true, "/w", "/w")
	merge := mergeInto("h", later, true, "/w", "/w", ev.Data)

	pending, _ := json.Marshal(map[string]any{"note": "kept", "count": 2, "changes": []any{
		map[string]any{"path": "/w/a.md", "operation": "created"},
		map[string]any{"path": "/w/c.md", "operation": "created"},
	}})
	got, err := merge(pending)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `{"changes":[{"absolute_path":"/w/a.md","operation":"created","path":"/w/a.md","relative_path":"a.md"},` +
		`{"absolute_path":"/w/b.md","operation":"modified","path":"/w/b.md","relative_path":"b.md"}],"count":2,"mtime":"2026-01-02T03:04:05Z",` +
		`"new_mtime":1767323045,"note":"kept","operation":"modified","path":"/w/b.md","paths":"a.md\nb.md","relative_path":"b.md","size":7,"watch_id":"h"}`
	if string(b) != want {
		t.Errorf("merged payload\n got %s\nwant %s", b, want)
	}

	// Everything the pending run held was undone: an empty list.
	undo := []Change{{Path: "/w/a.md", Op: engine.OpDeleted, seq: 1}}
	ev = watchEvent("h", undo, false, "/w", "/w")
	pending, _ = json.Marshal(map[string]any{"changes": []any{map[string]any{"path": "/w/a.md", "operation": "created"}}, "count": 1})
	got, err = mergeInto("h", undo, false, "/w", "/w", ev.Data)(pending)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(got); string(b) != `{"changes":[],"count":0,"path":"/w","paths":"","watch_id":"h"}` {
		t.Errorf("undone: %s", b)
	}

	if _, err := merge(json.RawMessage(`{"changes":"not a list"}`)); err == nil {
		t.Error("a pending payload whose changes are no list merged")
	}
}

// TestMergeIntoFolderPayload: a pending folder.changed payload, whose
// change paths are relative to the folder, merges by the absolute paths
// beside them: a file created then renamed is created under its new
// name, and paths lists the merged changes.
func TestMergeIntoFolderPayload(t *testing.T) {
	first := watchEvent("docs", []Change{{Path: "/w/docs/a.md", Op: engine.OpCreated, seq: 1},
		{Path: "/w/docs/sub/b.md", Op: engine.OpModified, seq: 2}}, false, "/w", "/w/docs")
	pending, _ := json.Marshal(first.Data)
	later := []Change{{Path: "/w/docs/c.md", OldPath: "/w/docs/a.md", Op: engine.OpRenamed, seq: 1}}
	ev := watchEvent("docs", later, false, "/w", "/w/docs")
	got, err := mergeInto("docs", later, false, "/w", "/w/docs", ev.Data)(pending)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `{"changes":[{"absolute_path":"/w/docs/c.md","operation":"created","path":"c.md","relative_path":"docs/c.md"},` +
		`{"absolute_path":"/w/docs/sub/b.md","operation":"modified","path":"sub/b.md","relative_path":"docs/sub/b.md"}],` +
		`"count":2,"path":"/w/docs","paths":"c.md\nsub/b.md","watch_id":"docs"}`
	if string(b) != want {
		t.Errorf("merged payload\n got %s\nwant %s", b, want)
	}
}
