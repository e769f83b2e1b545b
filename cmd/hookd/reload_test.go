package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
)

// listJSON returns `hookd list --json` by hook name.
func (e *env) listJSON() map[string]engine.HookStatus {
	e.t.Helper()
	r := e.must(0, "list", "--json")
	var hs []engine.HookStatus
	if err := json.Unmarshal([]byte(r.stdout), &hs); err != nil {
		e.t.Fatalf("decode list: %v\n%s", err, r)
	}
	out := map[string]engine.HookStatus{}
	for _, h := range hs {
		out[h.Name] = h
	}
	return out
}

// waitList waits until `hookd list` satisfies cond.
func (e *env) waitList(what string, cond func(map[string]engine.HookStatus) bool) map[string]engine.HookStatus {
	e.t.Helper()
	var last map[string]engine.HookStatus
	waitFor(e.t, what, func() bool {
		last = e.listJSON()
		return cond(last)
	}, func() string { b, _ := json.Marshal(last); return string(b) })
	return last
}

// watchRuns returns the runs of hook fired by its file watch, oldest first.
func (e *env) watchRuns(hook string) []*engine.Run {
	e.t.Helper()
	var out []*engine.Run
	for _, r := range e.listRuns(hook, "--limit", "100") {
		if r.Trigger == "watch" {
			out = append([]*engine.Run{r}, out...)
		}
	}
	return out
}

func (e *env) waitWatchRuns(hook string, n int) []*engine.Run {
	e.t.Helper()
	var runs []*engine.Run
	waitFor(e.t, "a run fired by the watch", func() bool {
		runs = e.watchRuns(hook)
		return len(runs) >= n
	}, nil)
	return runs
}

func payload(t *testing.T, r *engine.Run) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Event, &m); err != nil {
		t.Fatalf("run %s payload: %v (%s)", r.ID, err, r.Event)
	}
	return m
}

const docsHook = `trigger:
  watch: {paths: [docs], recursive: true, extensions: [.md], debounce: 100ms}
steps:
  - name: list
    type: shell
    command: echo "{{event.count}}"
skip_llm: true
`

func TestFileWatchFiresRun(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"docs.yaml": docsHook,
		"conf.yaml": "trigger:\n  watch: {paths: [app.conf], debounce: 100ms}\nskip_llm: true\n",
		// The whole project: hookd's database, written by every run, is
		// not reported.
		"all.yaml": "trigger:\n  watch: {paths: [.], recursive: true, ignore: [docs/, app.conf*], debounce: 100ms}\nskip_llm: true\n",
	})
	if err := os.Mkdir(e.path("docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := e.serve()
	if strings.Contains(d.log.String(), "not available yet") {
		t.Errorf("the daemon still says watching is not available:\n%s", d.log)
	}
	e.write("docs/guide.md", "# guide")
	e.write("docs/notes.txt", "not a doc")
	runs := e.waitWatchRuns("docs", 1)
	r := e.waitRun(runs[0].ID, engine.StatusCompleted)
	p := payload(t, r)
	if r.EventType != engine.EventFolderChanged || p["count"] != 1.0 {
		t.Fatalf("run: %s %v", r.EventType, p)
	}
	c := p["changes"].([]any)[0].(map[string]any)
	if c["relative_path"] != "docs/guide.md" || c["operation"] != engine.OpCreated {
		t.Errorf("change = %v", c)
	}
	if out := strings.TrimSpace(r.Steps[0].Output); out != "1" {
		t.Errorf("step saw count %q", out)
	}

	// A file watch: an editor-style save of the named file.
	e.write("app.conf", "a=1")
	first := e.waitWatchRuns("conf", 1)
	e.write("app.conf.tmp", "a=2")
	if err := os.Rename(e.path("app.conf.tmp"), e.path("app.conf")); err != nil {
		t.Fatal(err)
	}
	runs = e.waitWatchRuns("conf", len(first)+1)
	p = payload(t, runs[len(runs)-1])
	if runs[len(runs)-1].EventType != engine.EventFileChanged || p["operation"] != engine.OpModified || p["relative_path"] != "app.conf" {
		t.Errorf("editor save: %s %v", runs[len(runs)-1].EventType, p)
	}
	if n := len(e.watchRuns("docs")); n != 1 {
		t.Errorf("docs fired %d times, want 1", n)
	}
	// The project watch saw none of the runs' database writes: its first
	// run lists only what the test wrote.
	e.write("sentinel", "x")
	runs = e.waitWatchRuns("all", 1)
	c = payload(t, runs[0])["changes"].([]any)[0].(map[string]any)
	if len(runs) != 1 || c["relative_path"] != "sentinel" {
		t.Errorf("the project watch fired %d runs, first with %v", len(runs), payload(t, runs[0]))
	}
}

func TestReloadHooksDirectory(t *testing.T) {
	e := newProcEnv(t, "", map[string]string{
		"a.yaml": "description: first\ntrigger: {every: 1h}\nskip_llm: true\n",
	})
	d := e.serve()
	id := runID(t, e.must(0, "fire", "a", "--wait"))
	before := e.listJSON()["a"]

	// A new file schedules its hook.
	e.write("hooks.d/b.yaml", "trigger: {every: 1h}\nskip_llm: true\n")
	e.waitList("b to be added", func(m map[string]engine.HookStatus) bool { return !m["b"].NextDue.IsZero() })

	// An edited file replaces its hook and keeps its state.
	e.write("hooks.d/a.yaml", "description: second\ntrigger: {every: 2h}\nskip_llm: true\n")
	after := e.waitList("a's new version", func(m map[string]engine.HookStatus) bool { return m["a"].Version != before.Version })["a"]
	if after.LastRunID != id || after.Trigger != "every 2h" || after.File != "hooks.d/a.yaml" {
		t.Errorf("a after the edit: %+v", after)
	}

	// An edit that does not validate keeps the previous version's schedule,
	// but runs it no more: a fire is refused (invalid_file).
	e.write("hooks.d/a.yaml", "description: third\ntrigger: {every: 2h}\nskip_llm: true\nstpes: []\n")
	d.waitLog("hooks.d/a.yaml:4: stpes: unknown field")
	if !strings.Contains(d.log.String(), "the previous version keeps its schedule") {
		t.Errorf("the daemon did not say the old version stays:\n%s", d.log)
	}
	if m := e.listJSON(); m["a"].Version != after.Version {
		t.Errorf("a after a bad edit: version %s, want %s", m["a"].Version, after.Version)
	}
	if r := e.must(exitRefused, "fire", "a"); !strings.Contains(r.stderr, "invalid_file: hooks.d/a.yaml:4: stpes: unknown field") {
		t.Errorf("fire of a hook whose file does not load:\n%s", r)
	}

	// A deleted file unschedules its hook.
	if err := os.Remove(e.path("hooks.d/b.yaml")); err != nil {
		t.Fatal(err)
	}
	e.waitList("b to be removed", func(m map[string]engine.HookStatus) bool { _, ok := m["b"]; return !ok })
	if r := e.run("fire", "b"); r.code == 0 {
		t.Errorf("a removed hook fired:\n%s", r)
	}
}

func TestReloadOnSIGHUP(t *testing.T) {
	// hooks.d/x.yaml links to a file elsewhere: editing that file is
	// invisible to the watch of hooks.d, so SIGHUP reloads it.
	e := newProcEnv(t, "", nil)
	if err := os.Mkdir(e.path("shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("shared/x.yaml", "description: one\nskip_llm: true\n")
	if err := os.Symlink(filepath.Join("..", "shared", "x.yaml"), e.path("hooks.d/x.yaml")); err != nil {
		t.Fatal(err)
	}
	d := e.serve()
	v1 := e.listJSON()["x"].Version
	e.write("shared/x.yaml", "description: two\nskip_llm: true\n")
	d.signal(syscall.SIGHUP)
	d.waitLog("why=SIGHUP")
	if v2 := e.listJSON()["x"].Version; v2 == v1 {
		t.Errorf("version after SIGHUP is still %s", v1)
	}
	if d.exited() {
		t.Fatal("SIGHUP stopped the daemon")
	}
}

func TestReloadWatchHook(t *testing.T) {
	// A watch trigger added, retargeted and removed by editing its file.
	e := newEnv(t, "", nil)
	for _, dir := range []string{"one", "two"} {
		if err := os.Mkdir(e.path(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := e.serve()
	e.write("hooks.d/w.yaml", "trigger:\n  watch: {paths: [one], debounce: 50ms}\nskip_llm: true\n")
	d.waitLog("added=[w]")
	e.write("one/a", "x")
	e.waitWatchRuns("w", 1)

	e.write("hooks.d/w.yaml", "trigger:\n  watch: {paths: [two], debounce: 50ms}\nskip_llm: true\n")
	d.waitLog("changed=[w]")
	e.write("one/b", "x") // no longer watched
	e.write("two/c", "x")
	runs := e.waitWatchRuns("w", 2)
	c := payload(t, runs[1])["changes"].([]any)
	if len(runs) != 2 || len(c) != 1 || c[0].(map[string]any)["relative_path"] != "two/c" {
		t.Errorf("after retargeting: %d runs, last changes %v", len(runs), c)
	}
}

func TestScanOnStartAcrossRestart(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"scan.yaml": "trigger:\n  watch: {paths: [data], scan_on_start: true, debounce: 50ms}\nskip_llm: true\n",
	})
	if err := os.Mkdir(e.path("data"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("data/keep", "k")
	e.write("data/edit", "1")
	d := e.serve()
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, d.log)
	}
	if n := len(e.watchRuns("scan")); n != 0 {
		t.Fatalf("the first start fired %d runs", n)
	}

	// Changed while hookd was down.
	e.write("data/edit", "22")
	e.write("data/new", "n")
	e.serve()
	runs := e.waitWatchRuns("scan", 1)
	var got []string
	for _, c := range payload(t, runs[0])["changes"].([]any) {
		m := c.(map[string]any)
		got = append(got, m["relative_path"].(string)+" "+m["operation"].(string))
	}
	if strings.Join(got, ", ") != "data/edit modified, data/new created" {
		t.Errorf("changes while down: %v", got)
	}
}
