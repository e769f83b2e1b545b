package triggers

import (
	"slices"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

func TestWindowDeadline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, tc := range []struct {
		name              string
		first, last       time.Duration
		debounce, maxWait time.Duration
		want              time.Duration
	}{
		{"one change", 0, 0, time.Second, 0, time.Second},
		{"quiet period restarts", 0, 3 * time.Second, time.Second, time.Minute, 4 * time.Second},
		{"max_wait caps a burst", 0, 29500 * time.Millisecond, time.Second, 30 * time.Second, 30 * time.Second},
		{"default max_wait is 10 quiet periods", 0, 9 * time.Second, 2 * time.Second, 0, 11 * time.Second},
		{"default caps too", 0, 19 * time.Second, 2 * time.Second, 0, 20 * time.Second},
		{"no quiet period", 0, 0, 0, 0, 0},
	} {
		if got := windowDeadline(s(tc.first), s(tc.last), tc.debounce, tc.maxWait); !got.Equal(s(tc.want)) {
			t.Errorf("%s: deadline %v, want %v", tc.name, got.Sub(t0), tc.want)
		}
	}
}

func TestOpOf(t *testing.T) {
	none := fileState{}
	f1 := fileState{exists: true, size: 1, mtime: 10}
	f2 := fileState{exists: true, size: 2, mtime: 20}
	dir := fileState{exists: true, dir: true}
	for _, tc := range []struct {
		name      string
		base, now fileState
		written   bool
		want      string
	}{
		{"created", none, f1, true, engine.OpCreated},
		{"created then deleted", none, none, true, ""},
		{"modified", f1, f2, true, engine.OpModified},
		{"written, same size and mtime", f1, f1, true, engine.OpModified},
		{"touched attributes only", f1, f1, false, ""},
		{"deleted", f1, none, false, engine.OpDeleted},
		{"replaced by a folder", f1, dir, false, engine.OpDeleted},
		{"a folder", none, dir, true, ""},
	} {
		if got := opOf(tc.base, tc.now, tc.written); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestChangesOfPairsRenames(t *testing.T) {
	now := time.Now()
	present := fileState{exists: true, size: 3, mtime: 5}
	fs := map[string]fileState{"/new": present, "/target": present, "/created": present}
	stat := func(p string) fileState { return fs[p] }
	win := newWindow(now)
	win.add("/old", present, false, false, now)    // renamed away...
	win.add("/new", fileState{}, true, false, now) // ...to a new name
	win.pairs["/new"] = "/old"
	win.add("/tmp", fileState{}, true, false, now) // an editor's temporary file...
	win.add("/target", present, true, false, now)  // ...renamed over the target
	win.pairs["/target"] = "/tmp"
	win.add("/created", fileState{}, true, false, now)
	win.add("/outside", fileState{}, true, true, now) // only a rename's other name
	got := changesOf(win, stat)
	var ops []string
	for _, c := range got {
		ops = append(ops, c.Path+" "+c.Op+" "+c.OldPath)
	}
	want := []string{"/created created ", "/new renamed /old", "/target modified "}
	if !slices.Equal(ops, want) {
		t.Errorf("changes %q, want %q", ops, want)
	}
}

func TestWatchEventPayloads(t *testing.T) {
	mt := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	old := mt.Add(-90 * time.Second)
	changes := []Change{
		{Path: "/w/a", Op: engine.OpModified, Size: 7, ModTime: mt, OldModTime: old, seq: 2},
		{Path: "/w/b", Op: engine.OpDeleted, OldModTime: old, seq: 1},
	}
	ev := watchEvent("h", changes, true, "/w", "/w")
	if ev.Type != engine.EventFileChanged || ev.Data["path"] != "/w/a" || ev.Data["relative_path"] != "a" ||
		ev.Data["operation"] != engine.OpModified || ev.Data["size"] != int64(7) || ev.Data["mtime"] != "2026-05-01T12:00:00Z" ||
		ev.Data["count"] != 2 || ev.Data["watch_id"] != "h" || ev.Data["paths"] != "a\nb" ||
		ev.Data["new_mtime"] != float64(mt.Unix()) || ev.Data["old_mtime"] != float64(old.Unix()) {
		t.Errorf("file.changed: %v", ev.Data)
	}
	if c := ev.Data["changes"].([]any)[1].(map[string]any); c["path"] != "/w/b" || c["absolute_path"] != "/w/b" {
		t.Errorf("file.changed change: %v", c)
	}
	// A created file has no old_mtime.
	ev = watchEvent("h", []Change{{Path: "/w/n", Op: engine.OpCreated, ModTime: mt}}, true, "/w", "/w")
	if _, ok := ev.Data["old_mtime"]; ok || ev.Data["new_mtime"] != float64(mt.Unix()) {
		t.Errorf("created file.changed: %v", ev.Data)
	}

	// folder.changed: path is the folder; change paths are relative to it
	// (agent-queue's form), absolute_path and relative_path (to the
	// workdir) are there too.
	changes = []Change{{Path: "/w/docs/a.md", Op: engine.OpCreated, seq: 1}, {Path: "/w/docs/sub/b.md", Op: engine.OpDeleted, seq: 2}}
	ev = watchEvent("h", changes, false, "/elsewhere", "/w/docs")
	c := ev.Data["changes"].([]any)[1].(map[string]any)
	if ev.Type != engine.EventFolderChanged || ev.Data["path"] != "/w/docs" || ev.Data["paths"] != "a.md\nsub/b.md" ||
		c["path"] != "sub/b.md" || c["absolute_path"] != "/w/docs/sub/b.md" || c["relative_path"] != "/w/docs/sub/b.md" ||
		c["operation"] != engine.OpDeleted || ev.Data["watch_id"] != "h" {
		t.Errorf("folder.changed: %v", ev.Data)
	}
}

func TestCommonDir(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"/w/docs"}, "/w/docs"},
		{[]string{"/w/docs", "/w/specs"}, "/w"},
		{[]string{"/w/docs", "/w/docs/sub"}, "/w/docs"},
		{[]string{"/w/doc", "/w/docs"}, "/w"},
		{[]string{"/a", "/b"}, "/"},
	} {
		if got := commonDir(tc.in); got != tc.want {
			t.Errorf("commonDir(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
