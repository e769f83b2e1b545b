package triggers

// These tests run the real watcher on real temporary trees with real
// fsnotify. They wait on signals (a fire arriving), never on fixed sleeps,
// and assert no timings: the bounds below only stop a test that hangs.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

// waitLong bounds every wait; a wait that succeeds returns at once.
const waitLong = 60 * time.Second

func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		// Every watcher a test started must be stopped with its goroutines.
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			fmt.Fprintf(os.Stderr, "goroutines leaked: %d before the tests, %d after\n%s", before, n, buf)
			code = 1
		}
	}
	os.Exit(code)
}

// fired is one FireWatch call.
type fired struct {
	hook string
	ev   *engine.Event
}

// fakeTarget records fires on a channel.
type fakeTarget struct{ ch chan fired }

func newTarget() *fakeTarget { return &fakeTarget{ch: make(chan fired, 1000)} }

func (f *fakeTarget) FireWatch(ctx context.Context, hook string, ev *engine.Event) (*engine.Run, error) {
	select {
	case f.ch <- fired{hook, ev}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &engine.Run{ID: "run-" + hook}, nil
}

// next waits for the next fire.
func (f *fakeTarget) next(t *testing.T) fired {
	t.Helper()
	select {
	case x := <-f.ch:
		return x
	case <-time.After(waitLong):
		t.Fatal("timed out waiting for a watch to fire")
		return fired{}
	}
}

// logBuffer collects a watcher's log.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startWatcher starts a watcher on target, stopped when the test ends.
func startWatcher(t *testing.T, target WatchTarget, tweak ...func(*WatcherOptions, *Watcher)) (*Watcher, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	opts := WatcherOptions{Target: target, Logger: slog.New(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), nil)),
		PollInterval: 100 * time.Millisecond}
	w := NewWatcher(opts)
	for _, f := range tweak {
		f(&w.opts, w)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w, logs
}

// testWriter logs through t while the test runs.
type testWriter struct{ t *testing.T }

func (tw testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() {
		tw.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

// watchHook is a hook watching spec.
func watchHook(name string, spec engine.WatchSpec) *engine.Hook {
	if spec.Debounce == 0 {
		spec.Debounce = 100 * time.Millisecond
	}
	return &engine.Hook{Name: name, Enabled: true, Trigger: engine.Trigger{Kind: engine.TriggerWatch, Watch: &spec}}
}

func setHooks(t *testing.T, w *Watcher, hooks ...*engine.Hook) {
	t.Helper()
	if err := w.SetHooks(context.Background(), hooks); err != nil {
		t.Fatal(err)
	}
}

func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func write(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// change is a (path, operation) pair of a fired event, for comparing.
type change struct{ path, op, old string }

func changesIn(t *testing.T, ev *engine.Event) []change {
	t.Helper()
	list, ok := ev.Data["changes"].([]any)
	if !ok {
		t.Fatalf("event %s has no changes list: %v", ev.Type, ev.Data)
	}
	var out []change
	for _, x := range list {
		m := x.(map[string]any)
		// Compared by absolute path: a folder.changed path is relative
		// to the folder (TestWatchEventPayloads checks the forms).
		c := change{path: m["absolute_path"].(string), op: m["operation"].(string)}
		if o, ok := m["old_absolute_path"].(string); ok {
			c.old = o
		}
		out = append(out, c)
	}
	if n, _ := ev.Data["count"].(int); n != len(out) {
		t.Errorf("count = %v, changes has %d", ev.Data["count"], len(out))
	}
	return out
}

func wantChanges(t *testing.T, ev *engine.Event, want ...change) {
	t.Helper()
	got := changesIn(t, ev)
	if !slices.Equal(got, want) {
		t.Fatalf("changes:\n got %v\nwant %v", got, want)
	}
}

func TestWatchEditorSaveIsAModification(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	target := filepath.Join(dir, "config.yaml")
	write(t, target, "a: 1\n")
	ft := newTarget()
	w, _ := startWatcher(t, ft)
	// The save's two steps must fall in one window: a quiet period the
	// default 100ms of these tests would let a busy machine's pause split.
	setHooks(t, w,
		watchHook("file", engine.WatchSpec{Paths: []string{target}, Debounce: time.Second}),
		watchHook("folder", engine.WatchSpec{Paths: []string{dir}, Debounce: time.Second}))

	// What editors do: write a temporary file next to the target, then
	// rename it over the target.
	tmp := filepath.Join(dir, ".config.yaml.swp")
	write(t, tmp, "a: 2\n")
	if err := os.Rename(tmp, target); err != nil {
		t.Fatal(err)
	}
	got := map[string]*engine.Event{}
	for len(got) < 2 {
		f := ft.next(t)
		if got[f.hook] != nil {
			t.Fatalf("hook %s fired twice: %v", f.hook, f.ev.Data)
		}
		got[f.hook] = f.ev
	}
	file := got["file"]
	if file.Type != engine.EventFileChanged || file.Data["operation"] != engine.OpModified || file.Data["path"] != target ||
		file.Data["size"] != int64(5) || file.Data["mtime"] == nil {
		t.Errorf("file watch: %s %v", file.Type, file.Data)
	}
	wantChanges(t, file, change{target, engine.OpModified, ""})
	folder := got["folder"]
	if folder.Type != engine.EventFolderChanged {
		t.Errorf("folder watch fired %s", folder.Type)
	}
	wantChanges(t, folder, change{target, engine.OpModified, ""})
}

// TestWatchBurstFiresOnceWithEachPathOnce: 500 writes to 50 files, one
// fire listing each path once. That is one fire only if no pause between
// two writes reached the quiet period: the writes measure their pauses,
// and a burst a stalled machine split is written again (at most twice
// more), in a new folder with a new watcher.
func TestWatchBurstFiresOnceWithEachPathOnce(t *testing.T) {
	t.Parallel()
	const debounce = 3 * time.Second // far longer than any pause between the writes
	for attempt := 1; ; attempt++ {
		split, pause := watchBurst(t, debounce, attempt == 3)
		if !split {
			return
		}
		t.Logf("attempt %d: the machine paused the burst for %s, more than the quiet period %s; again", attempt, pause, debounce)
	}
}

// watchBurst writes the burst and checks its fire. When the fire did not
// list the whole burst while a pause between writes reached debounce, it
// returns split (unless last: then the test fails).
func watchBurst(t *testing.T, debounce time.Duration, last bool) (split bool, pause time.Duration) {
	t.Helper()
	dir := tempDir(t)
	for i := range 25 {
		write(t, filepath.Join(dir, fmt.Sprintf("old%02d.txt", i)), "old")
	}
	ft := newTarget()
	w, _ := startWatcher(t, ft)
	setHooks(t, w, watchHook("burst", engine.WatchSpec{Paths: []string{dir}, Debounce: debounce, MaxWait: time.Minute}))

	// 500 writes in about 2s: 25 existing files and 25 new ones, 10 each.
	var want []change
	for i := range 25 {
		want = append(want, change{filepath.Join(dir, fmt.Sprintf("new%02d.txt", i)), engine.OpCreated, ""})
		want = append(want, change{filepath.Join(dir, fmt.Sprintf("old%02d.txt", i)), engine.OpModified, ""})
	}
	slices.SortFunc(want, func(a, b change) int { return strings.Compare(a.path, b.path) })
	start := time.Now()
	prev := start
	for n := range 500 {
		i := n % 50
		p := filepath.Join(dir, fmt.Sprintf("old%02d.txt", i/2))
		if i%2 == 1 {
			p = filepath.Join(dir, fmt.Sprintf("new%02d.txt", i/2))
		}
		write(t, p, fmt.Sprintf("write %d", n))
		now := time.Now()
		pause, prev = max(pause, now.Sub(prev)), now
		if d := time.Until(start.Add(time.Duration(n+1) * 4 * time.Millisecond)); d > 0 {
			time.Sleep(d) // pacing the burst, not waiting for the watcher
		}
	}
	f := ft.next(t)
	if !last && pause >= debounce && !slices.Equal(changesIn(t, f.ev), want) {
		return true, pause
	}
	wantChanges(t, f.ev, want...)

	// Nothing else fires for the burst: the next fire lists only what
	// changed after it.
	sentinel := filepath.Join(dir, "sentinel")
	write(t, sentinel, "x")
	wantChanges(t, ft.next(t).ev, change{sentinel, engine.OpCreated, ""})
	return false, pause
}

func TestWatchMaxWaitFiresDuringEndlessWrites(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	ft := newTarget()
	w, _ := startWatcher(t, ft)
	// The quiet period never comes; max_wait must fire anyway.
	setHooks(t, w, watchHook("busy", engine.WatchSpec{Paths: []string{dir}, Debounce: time.Minute, MaxWait: time.Second}))
	p := filepath.Join(dir, "log.txt")
	deadline := time.After(waitLong)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		write(t, p, strings.Repeat("x", n))
		select {
		case f := <-ft.ch:
			if f.hook != "busy" {
				t.Fatalf("fired %s", f.hook)
			}
			wantChanges(t, f.ev, change{p, engine.OpCreated, ""})
			return
		case <-deadline:
			t.Fatal("writes every 100ms never fired the watch (max_wait 1s)")
		case <-tick.C:
		}
	}
}

func TestWatchRecursiveNewSubfolder(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	ft := newTarget()
	w, _ := startWatcher(t, ft)
	setHooks(t, w, watchHook("tree", engine.WatchSpec{Paths: []string{dir}, Recursive: true}))

	// A folder made after the watch started, a file inside it, and a
	// deeper tree made in one go.
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "sub", "a.md")
	write(t, a, "a")
	wantChanges(t, ft.next(t).ev, change{a, engine.OpCreated, ""})

	deep := filepath.Join(dir, "x", "y", "z", "deep.md")
	write(t, deep, "deep") // MkdirAll then the file: faster than the watcher can add watches
	wantChanges(t, ft.next(t).ev, change{deep, engine.OpCreated, ""})

	// The new folders are watched now: a later change is seen.
	write(t, deep, "deeper")
	wantChanges(t, ft.next(t).ev, change{deep, engine.OpModified, ""})

	// A folder removed with its files: they are deleted, and its watch
	// is dropped.
	if err := os.RemoveAll(filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	wantChanges(t, ft.next(t).ev, change{deep, engine.OpDeleted, ""})
	waitDirs(t, w, 2) // dir and dir/sub
}

// waitDirs waits until w watches n folders with inotify.
func waitDirs(t *testing.T, w *Watcher, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		st, err := w.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Dirs == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("watching %d folders, want %d", st.Dirs, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatchNonRecursiveIgnoresSubfolders(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	ft := newTarget()
	w, _ := startWatcher(t, ft)
	setHooks(t, w, watchHook("flat", engine.WatchSpec{Paths: []string{dir}}))
	write(t, filepath.Join(dir, "sub", "deep.md"), "x")
	top := filepath.Join(dir, "top.md")
	write(t, top, "x")
	wantChanges(t, ft.next(t).ev, change{top, engine.OpCreated, ""})
}

func TestWatchFilters(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	ft := newTarget()
	w, _ := startWatcher(t, ft)
	setHooks(t, w, watchHook("docs", engine.WatchSpec{
		Paths: []string{dir}, Recursive: true, Extensions: []string{".md"},
		Ignore: []string{"drafts/", "*.tmp.md", "/build"}, Include: []string{"**/*.md", "*.MD"},
		Debounce: time.Second, // the two reported writes fall in one window, however loaded the machine
	}))
	// None of these is reported...
	for _, p := range []string{"a.txt", "drafts/x.md", "sub/drafts/y.md", "b.tmp.md", "build/out.md", ".git/HEAD.md", "sub/.git/c.md"} {
		write(t, filepath.Join(dir, p), "x")
	}
	// ...these are, and nothing else.
	a, nested := filepath.Join(dir, "a.MD"), filepath.Join(dir, "sub", "build", "n.md")
	write(t, a, "x")
	write(t, nested, "x")
	wantChanges(t, ft.next(t).ev, change{a, engine.OpCreated, ""}, change{nested, engine.OpCreated, ""})

	// Ignored folders are not even watched.
	st, err := w.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Dirs != 3 { // dir, sub, sub/build
		t.Errorf("watching %d folders, want 3 (ignored ones are not watched)", st.Dirs)
	}
}

func TestWatchTwoHooksEachFireForTheirOwn(t *testing.T) {
	t.Parallel()
	root := tempDir(t)
	da, db := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{da, db} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ft := newTarget()
	w, _ := startWatcher(t, ft)
	setHooks(t, w, watchHook("a", engine.WatchSpec{Paths: []string{da}}), watchHook("b", engine.WatchSpec{Paths: []string{db}}))

	fa := filepath.Join(da, "x")
	write(t, fa, "x")
	f := ft.next(t)
	if f.hook != "a" {
		t.Fatalf("a change in a/ fired %s", f.hook)
	}
	wantChanges(t, f.ev, change{fa, engine.OpCreated, ""})
	fb := filepath.Join(db, "y")
	write(t, fb, "y")
	f = ft.next(t)
	if f.hook != "b" {
		t.Fatalf("a change in b/ fired %s", f.hook)
	}
	wantChanges(t, f.ev, change{fb, engine.OpCreated, ""})
}

func TestWatchCoalescingRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup []string // files that exist before
		do    func(t *testing.T, dir string)
		want  func(dir string) []change
	}{
		{"created then modified is created", nil, func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "f"), "1")
			write(t, filepath.Join(dir, "f"), "22")
		}, func(dir string) []change { return []change{{filepath.Join(dir, "f"), engine.OpCreated, ""}} }},
		{"created then deleted is nothing", nil, func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "f"), "1")
			os.Remove(filepath.Join(dir, "f"))
			write(t, filepath.Join(dir, "sentinel"), "1")
		}, func(dir string) []change { return []change{{filepath.Join(dir, "sentinel"), engine.OpCreated, ""}} }},
		{"modified then deleted is deleted", []string{"f"}, func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "f"), "changed")
			os.Remove(filepath.Join(dir, "f"))
		}, func(dir string) []change { return []change{{filepath.Join(dir, "f"), engine.OpDeleted, ""}} }},
		{"deleted then created is modified", []string{"f"}, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "f"))
			write(t, filepath.Join(dir, "f"), "again")
		}, func(dir string) []change { return []change{{filepath.Join(dir, "f"), engine.OpModified, ""}} }},
		{"renamed is reported with both paths", []string{"old"}, func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, "old"), filepath.Join(dir, "new")); err != nil {
				t.Fatal(err)
			}
		}, func(dir string) []change {
			return []change{{filepath.Join(dir, "new"), engine.OpRenamed, filepath.Join(dir, "old")}}
		}},
		{"created then renamed is created", nil, func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "tmp"), "1")
			if err := os.Rename(filepath.Join(dir, "tmp"), filepath.Join(dir, "final")); err != nil {
				t.Fatal(err)
			}
		}, func(dir string) []change { return []change{{filepath.Join(dir, "final"), engine.OpCreated, ""}} }},
		{"a folder renamed renames its files", []string{"d/a", "d/e/b"}, func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "d2")); err != nil {
				t.Fatal(err)
			}
		}, func(dir string) []change {
			return []change{
				{filepath.Join(dir, "d2", "a"), engine.OpRenamed, filepath.Join(dir, "d", "a")},
				{filepath.Join(dir, "d2", "e", "b"), engine.OpRenamed, filepath.Join(dir, "d", "e", "b")},
			}
		}},
	}
	// Every case makes its changes, each in a folder and a watcher of its
	// own, before any case waits for its fire: the quiet periods run at
	// once instead of one after another (as parallel subtests, at most
	// GOMAXPROCS at a time).
	type watched struct {
		ft  *fakeTarget
		dir string
	}
	ws := make([]watched, len(cases))
	for i, tc := range cases {
		dir := tempDir(t)
		for _, p := range tc.setup {
			write(t, filepath.Join(dir, p), "before")
		}
		ft := newTarget()
		w, _ := startWatcher(t, ft)
		setHooks(t, w, watchHook("h", engine.WatchSpec{Paths: []string{dir}, Recursive: true, Debounce: 2 * time.Second, MaxWait: time.Minute}))
		tc.do(t, dir)
		ws[i] = watched{ft, dir}
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantChanges(t, ws[i].ft.next(t).ev, tc.want(ws[i].dir)...)
		})
	}
}

func TestWatchMissingPathAppears(t *testing.T) {
	t.Parallel()
	root := tempDir(t)
	docs := filepath.Join(root, "project", "docs")
	cfg := filepath.Join(root, "project", "app.conf")
	ft := newTarget()
	w, _ := startWatcher(t, ft)
	setHooks(t, w,
		watchHook("docs", engine.WatchSpec{Paths: []string{docs}, Recursive: true}),
		watchHook("conf", engine.WatchSpec{Paths: []string{cfg}}))

	// Neither exists yet; both are seen when they appear.
	p := filepath.Join(docs, "guide", "intro.md")
	write(t, p, "x")
	f := ft.next(t)
	if f.hook != "docs" {
		t.Fatalf("fired %s", f.hook)
	}
	wantChanges(t, f.ev, change{p, engine.OpCreated, ""})
	write(t, cfg, "x")
	f = ft.next(t)
	if f.hook != "conf" || f.ev.Type != engine.EventFileChanged {
		t.Fatalf("fired %s %s", f.hook, f.ev.Type)
	}
	wantChanges(t, f.ev, change{cfg, engine.OpCreated, ""})

	// The watched folder goes away and comes back.
	if err := os.RemoveAll(docs); err != nil {
		t.Fatal(err)
	}
	f = ft.next(t)
	if f.ev.Type != engine.EventFolderChanged {
		t.Errorf("a watched folder that is gone fired %s", f.ev.Type)
	}
	wantChanges(t, f.ev, change{p, engine.OpDeleted, ""})
	q := filepath.Join(docs, "again.md")
	write(t, q, "x")
	wantChanges(t, ft.next(t).ev, change{q, engine.OpCreated, ""})
}

func TestWatchExcludesHookdFiles(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	db := filepath.Join(dir, "hookd.db")
	ft := newTarget()
	w, _ := startWatcher(t, ft, func(o *WatcherOptions, _ *Watcher) { o.Exclude = []string{db} })
	setHooks(t, w, watchHook("all", engine.WatchSpec{Paths: []string{dir}}))
	write(t, db, "x")
	write(t, db+"-wal", "x")
	p := filepath.Join(dir, "real")
	write(t, p, "x")
	wantChanges(t, ft.next(t).ev, change{p, engine.OpCreated, ""})
}

func TestWatchOverflowRescans(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	for _, p := range []string{"keep", "modify", "remove", "sub/inner"} {
		write(t, filepath.Join(dir, p), "before")
	}
	ft := newTarget()
	// Drop every event until told otherwise, as the kernel does when its
	// queue overflows; signal when the last change's event was dropped.
	var (
		mu      sync.Mutex
		drop    = true
		dropped = make(chan struct{})
		once    sync.Once
	)
	last := filepath.Join(dir, "sub", "inner")
	w, logs := startWatcher(t, ft, func(_ *WatcherOptions, w *Watcher) {
		w.rawFilter = func(ev fsnotify.Event) bool {
			mu.Lock()
			defer mu.Unlock()
			if drop && ev.Name == last && ev.Has(fsnotify.Remove) {
				once.Do(func() { close(dropped) })
			}
			return !drop
		}
	})
	setHooks(t, w, watchHook("tree", engine.WatchSpec{Paths: []string{dir}, Recursive: true}))

	write(t, filepath.Join(dir, "modify"), "after!")
	os.Remove(filepath.Join(dir, "remove"))
	write(t, filepath.Join(dir, "new", "file"), "new")
	os.Remove(last)
	select {
	case <-dropped:
	case <-time.After(waitLong):
		t.Fatal("the events were never delivered")
	}
	if err := w.do(context.Background(), func() {
		mu.Lock()
		drop = false
		mu.Unlock()
		w.watchError(fsnotify.ErrEventOverflow)
	}); err != nil {
		t.Fatal(err)
	}
	wantChanges(t, ft.next(t).ev,
		change{filepath.Join(dir, "modify"), engine.OpModified, ""},
		change{filepath.Join(dir, "new", "file"), engine.OpCreated, ""},
		change{filepath.Join(dir, "remove"), engine.OpDeleted, ""},
		change{last, engine.OpDeleted, ""},
	)
	if !strings.Contains(logs.String(), "overflowed") || !strings.Contains(logs.String(), "changes=4") {
		t.Errorf("the overflow and what the rescan found are not logged:\n%s", logs)
	}
	// The new folder found by the rescan is watched.
	p := filepath.Join(dir, "new", "later")
	write(t, p, "x")
	wantChanges(t, ft.next(t).ev, change{p, engine.OpCreated, ""})
}

func TestWatchPolling(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	existing := filepath.Join(dir, "existing.txt")
	write(t, existing, "x")
	ft := newTarget()
	w, _ := startWatcher(t, ft)
	setHooks(t, w, watchHook("poll", engine.WatchSpec{Paths: []string{dir}, Recursive: true, Poll: true, Ignore: []string{"skip/"}}))
	st, err := w.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Dirs != 0 || !slices.Equal(st.Polling, []string{"poll"}) {
		t.Fatalf("poll: true watches %d folders with inotify and polls %v", st.Dirs, st.Polling)
	}
	p := filepath.Join(dir, "sub", "new.txt")
	write(t, filepath.Join(dir, "skip", "ignored.txt"), "x")
	write(t, p, "x")
	wantChanges(t, ft.next(t).ev, change{p, engine.OpCreated, ""})
	write(t, existing, "longer")
	wantChanges(t, ft.next(t).ev, change{existing, engine.OpModified, ""})
	os.Remove(p)
	wantChanges(t, ft.next(t).ev, change{p, engine.OpDeleted, ""})
}

func TestWatchLimitFallsBackToPolling(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	ft := newTarget()
	w, logs := startWatcher(t, ft, func(_ *WatcherOptions, w *Watcher) {
		w.addWatch = func(string) error { return fmt.Errorf("add watch: %w", syscall.ENOSPC) }
	})
	setHooks(t, w, watchHook("limited", engine.WatchSpec{Paths: []string{dir}, Recursive: true}))
	if !strings.Contains(logs.String(), "fs.inotify.max_user_watches") || !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("the limit is not logged as an error naming the sysctl:\n%s", logs)
	}
	st, err := w.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Polling, []string{"limited"}) {
		t.Fatalf("polling %v, want the watch that hit the limit", st.Polling)
	}
	p := filepath.Join(dir, "f")
	write(t, p, "x")
	wantChanges(t, ft.next(t).ev, change{p, engine.OpCreated, ""})
}

func TestWatchScanOnStart(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	for _, p := range []string{"same", "modify", "remove"} {
		write(t, filepath.Join(dir, p), "before")
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hook := watchHook("scan", engine.WatchSpec{Paths: []string{dir}, Recursive: true, ScanOnStart: true})
	start := func() (*Watcher, *fakeTarget) {
		ft := newTarget()
		w, _ := startWatcher(t, ft, func(o *WatcherOptions, _ *Watcher) { o.Snapshots = db })
		setHooks(t, w, hook)
		return w, ft
	}

	// The first start takes the snapshot and fires nothing.
	w, ft := start()
	w.Stop()
	if len(ft.ch) != 0 {
		t.Fatalf("the first start fired: %v", (<-ft.ch).ev.Data)
	}
	if files, ok, err := db.LoadSnapshot(context.Background(), "scan"); err != nil || !ok || len(files) != 3 {
		t.Fatalf("snapshot after the first start: %v %v %v", files, ok, err)
	}

	// Changes while hookd is down fire at the next start.
	write(t, filepath.Join(dir, "modify"), "after!")
	os.Remove(filepath.Join(dir, "remove"))
	write(t, filepath.Join(dir, "sub", "new"), "new")
	w, ft = start()
	wantChanges(t, ft.next(t).ev,
		change{filepath.Join(dir, "modify"), engine.OpModified, ""},
		change{filepath.Join(dir, "remove"), engine.OpDeleted, ""},
		change{filepath.Join(dir, "sub", "new"), engine.OpCreated, ""},
	)
	// A change while it runs updates the snapshot after the fire too.
	later := filepath.Join(dir, "later")
	write(t, later, "x")
	wantChanges(t, ft.next(t).ev, change{later, engine.OpCreated, ""})
	w.Stop()

	// Nothing changed since: the next start fires only for what comes.
	w, ft = start()
	sentinel := filepath.Join(dir, "sentinel")
	write(t, sentinel, "x")
	wantChanges(t, ft.next(t).ev, change{sentinel, engine.OpCreated, ""})
	w.Stop()

	// A hook that is no longer watched loses its snapshot.
	w, _ = start()
	setHooks(t, w)
	w.Stop()
	if _, ok, err := db.LoadSnapshot(context.Background(), "scan"); err != nil || ok {
		t.Fatalf("snapshot of an unwatched hook: ok=%v err=%v", ok, err)
	}
}

func TestWatchSetHooksReplacesAndRemoves(t *testing.T) {
	t.Parallel()
	root := tempDir(t)
	da, db := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{da, db} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ft := newTarget()
	w, _ := startWatcher(t, ft)
	setHooks(t, w, watchHook("h", engine.WatchSpec{Paths: []string{da}}), watchHook("gone", engine.WatchSpec{Paths: []string{db}}))
	// h now watches b instead of a; gone is gone.
	setHooks(t, w, watchHook("h", engine.WatchSpec{Paths: []string{db}}))
	st, err := w.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Dirs != 1 {
		t.Errorf("watching %d folders, want 1", st.Dirs)
	}
	write(t, filepath.Join(da, "ignored"), "x")
	p := filepath.Join(db, "seen")
	write(t, p, "x")
	f := ft.next(t)
	if f.hook != "h" {
		t.Fatalf("fired %s", f.hook)
	}
	wantChanges(t, f.ev, change{p, engine.OpCreated, ""})
}

func TestWatchFuncAndStopTwice(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	w, _ := startWatcher(t, nil)
	got := make(chan []Change, 10)
	if err := w.WatchFunc(context.Background(), "hooks", engine.WatchSpec{Paths: []string{dir}, Extensions: []string{".yaml"}, Debounce: 50 * time.Millisecond},
		func(c []Change) { got <- c }); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "a.yaml")
	write(t, p, "x")
	select {
	case c := <-got:
		if len(c) != 1 || c[0].Path != p || c[0].Op != engine.OpCreated {
			t.Fatalf("changes %+v", c)
		}
	case <-time.After(waitLong):
		t.Fatal("no change reported")
	}
	w.Stop()
	w.Stop()
	if err := w.WatchFunc(context.Background(), "late", engine.WatchSpec{Paths: []string{dir}}, func([]Change) {}); !errors.Is(err, ErrWatcherStopped) {
		t.Errorf("WatchFunc after Stop: %v", err)
	}
}

func TestWatchFollowsALinkedPath(t *testing.T) {
	t.Parallel()
	root := tempDir(t)
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) {
			ft := newTarget()
			w, _ := startWatcher(t, ft)
			setHooks(t, w, watchHook("linked", engine.WatchSpec{Paths: []string{link}, Recursive: true, Poll: poll}))
			name := fmt.Sprintf("f-%v", poll)
			write(t, filepath.Join(real, "sub", name), "x")
			f := ft.next(t)
			if f.ev.Type != engine.EventFolderChanged {
				t.Errorf("a linked folder fired %s", f.ev.Type)
			}
			wantChanges(t, f.ev, change{filepath.Join(link, "sub", name), engine.OpCreated, ""})
		})
	}
}

func TestWatchWithoutInotifyPolls(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	ft := newTarget()
	w, logs := startWatcher(t, ft, func(_ *WatcherOptions, w *Watcher) {
		w.newFS = func() (*fsnotify.Watcher, error) { return nil, fmt.Errorf("inotify_init1: %w", syscall.EMFILE) }
	})
	if !strings.Contains(logs.String(), "fs.inotify.max_user_instances") || !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("the instance limit is not logged as an error naming the sysctl:\n%s", logs)
	}
	setHooks(t, w, watchHook("h", engine.WatchSpec{Paths: []string{dir}}))
	p := filepath.Join(dir, "f")
	write(t, p, "x")
	wantChanges(t, ft.next(t).ev, change{p, engine.OpCreated, ""})
}
