package main

import (
	"database/sql"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/daemon"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/procjournal"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/llm/llmtest"
)

// The step sleeps in the foreground after leaving a grandchild behind:
// a subshell starts a background sleep and exits at once.
const journalLong = `description: outlives the daemon
steps:
  - type: shell
    command: '(sleep 60 >/dev/null 2>&1 & echo $! > grand.txt); echo $$ > long.pid; sleep 60'
skip_llm: true
`

// journalPath is the process journal of a test's daemon.
func journalPath(e *env) string { return e.path(".hookd/hookd.db" + daemon.ProcJournalSuffix) }

// startedAt is the start of pid in clock ticks after boot (/proc/PID/stat).
func startedAt(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	start, err := strconv.ParseUint(f[19], 10, 64) // field 22, the third after the name being field 3
	if err != nil {
		t.Fatal(err)
	}
	return start
}

// unrelated starts `sleep 60`, not hookd's, leading a group of its own
// when group is set (else in the test's group); it ends with the test.
func unrelated(t *testing.T, group bool) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// slotBytes is the slot the journal writes for run and g.
func slotBytes(t *testing.T, run string, g engine.ProcGroup) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scratch.procs")
	j, err := procjournal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Track(run, g); err != nil {
		t.Fatal(err)
	}
	j.Close()
	b, err := os.ReadFile(path)
	if err != nil || len(b) != procjournal.SlotSize {
		t.Fatalf("scratch journal: %d bytes, %v", len(b), err)
	}
	return b
}

// fireLong fires journalLong's hook on daemon d and waits for its step
// and the step's background grandchild to run, and for the journal to
// record the step's group; it returns the run and their pids.
//
// The journal is written while the step already runs (process.Command
// records the group in parallel with the command), so on a loaded
// machine the step can write its pid files before its slot is in the
// file: the test waits for both.
func fireLong(t *testing.T, e *env, d *served) (id string, leader, grand int) {
	t.Helper()
	id = runID(t, e.must(0, "fire", "long"))
	var es []procjournal.Entry
	waitFor(t, "the step and its grandchild to run, and the journal to record the step's group", func() bool {
		leader, grand = pidIn(e, "long.pid"), pidIn(e, "grand.txt")
		if leader <= 0 || grand <= 0 || testtool.ProcessGone(grand) {
			return false
		}
		// The grandchild is a forked subshell until it execs sleep; the
		// reap is asserted to name it "sleep".
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", grand)); err != nil || strings.TrimSpace(string(comm)) != "sleep" {
			return false
		}
		var err error
		es, err = procjournal.Entries(journalPath(e))
		return err == nil && slices.ContainsFunc(es, func(en procjournal.Entry) bool { return en.Run == id })
	}, func() string { return fmt.Sprintf("journal %+v\n%s", es, d.log) })
	return id, leader, grand
}

// TestCrashReapsFromJournal kills a real daemon with SIGKILL while a step
// sleeps, with a grandchild in the background: the step's process group
// is in the journal file and not in the database (no commit recorded
// it). Before the restart, the journal gets garbage, a torn slot, a slot
// with a bad checksum and slots naming live processes that are not the
// step's (under the interrupted run with the wrong start time or boot;
// under a run that was not interrupted; a process that leads no group;
// a window of start ticks that admits any process).
// The restarted daemon kills the step's processes, grandchild included,
// says so in `hookd run`, kills nothing else, and empties the journal.
func TestCrashReapsFromJournal(t *testing.T) {
	e := newProcEnv(t, "", map[string]string{"long.yaml": journalLong, "quick.yaml": crashOther})
	d := e.serve()
	done := runID(t, e.must(0, "fire", "quick", "--wait")) // a run that is not interrupted
	id, leader, grand := fireLong(t, e, d)

	es, err := procjournal.Entries(journalPath(e))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Run != id || es[0].Group.PGID != leader || es[0].Group.Step != 0 {
		t.Fatalf("journal while the step runs: %+v; want run %s's group %d", es, id, leader)
	}
	raw, err := sql.Open("sqlite3", e.path(".hookd/hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var procs sql.NullString
	if err := raw.QueryRow(`SELECT procs FROM runs WHERE id = ?`, id).Scan(&procs); err != nil || procs.Valid {
		t.Errorf("the run's row holds procs %q (%v); want none: the journal holds the group", procs.String, err)
	}

	d.signal(syscall.SIGKILL)
	if code := d.wait(); code != -1 {
		t.Fatalf("hookd serve killed by SIGKILL: exit code %d", code)
	}
	if testtool.ProcessGone(leader) || testtool.ProcessGone(grand) {
		t.Fatalf("the step's processes %d and %d died with the daemon; the test cannot see them reaped", leader, grand)
	}

	// What must not be killed.
	boot := es[0].Group.Boot
	other := unrelated(t, true)   // leads a group of its own
	member := unrelated(t, false) // in the test's group
	otherStart, memberStart := startedAt(t, other), startedAt(t, member)
	j, err := procjournal.Open(journalPath(e))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		run string
		g   engine.ProcGroup
	}{
		{id, engine.ProcGroup{PGID: other, Start: otherStart - 3, StartEnd: otherStart - 1, Boot: boot}},
		{id, engine.ProcGroup{PGID: other, Start: otherStart + 1, Boot: boot}},
		{id, engine.ProcGroup{PGID: other, Start: otherStart, StartEnd: otherStart, Boot: "00000000-0000-0000-0000-000000000000"}},
		{done, engine.ProcGroup{PGID: other, Start: otherStart, StartEnd: otherStart, Boot: boot}},
		{"01NOSUCHRUN0000000000000000", engine.ProcGroup{PGID: other, Start: otherStart, Boot: boot}},
		{id, engine.ProcGroup{PGID: member, Start: memberStart, Boot: boot}},
		// A window that admits every start tick (a forged slot).
		{id, engine.ProcGroup{PGID: other, Start: 1, StartEnd: math.MaxUint64, Boot: boot}},
	} {
		if _, err := j.Track(w.run, w.g); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	killer := slotBytes(t, id, engine.ProcGroup{PGID: other, Start: otherStart, StartEnd: otherStart, Boot: boot})
	torn := append([]byte(nil), killer...)
	copy(torn[4:8], []byte{0, 0, 0, 0}) // its checksum never written
	flipped := append([]byte(nil), killer...)
	flipped[12] ^= 0x40 // one bit of the step index
	f, err := os.OpenFile(journalPath(e), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{[]byte(strings.Repeat("\xa5garbage", 16)), torn, flipped, killer[:100]} {
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()

	d2 := e.serve()
	waitFor(t, "the step's processes to be killed", func() bool {
		return testtool.ProcessGone(leader) && testtool.ProcessGone(grand)
	}, func() string { return d2.log.String() })
	for _, pid := range []int{other, member} {
		if testtool.ProcessGone(pid) {
			t.Errorf("process %d, not the step's, was killed", pid)
		}
	}
	got := e.getRun(id)
	if got.Status != engine.StatusInterrupted {
		t.Errorf("run %s is %s, want interrupted", id, got.Status)
	}
	text := e.must(0, "run", id).stdout
	for _, want := range []string{"at the next start hookd killed", strconv.Itoa(leader) + " (", strconv.Itoa(grand) + " (sleep)"} {
		if !strings.Contains(text, want) {
			t.Errorf("`hookd run %s` does not say %q:\n%s", id, want, text)
		}
	}
	if strings.Contains(text, strconv.Itoa(other)) || strings.Contains(text, strconv.Itoa(member)) {
		t.Errorf("`hookd run %s` names a process not the step's:\n%s", id, text)
	}
	if r := e.getRun(done); r.Status != engine.StatusCompleted || strings.Contains(r.Reason, "killed") {
		t.Errorf("run %s, not interrupted: %s %q", done, r.Status, r.Reason)
	}
	if st, err := os.Stat(journalPath(e)); err != nil || st.Size() != 0 || st.Mode().Perm() != 0o600 {
		t.Errorf("journal after the restart: %v, %v; want empty, mode 0600", st, err)
	}
	d2.signal(syscall.SIGTERM)
	if code := d2.wait(); code != 0 {
		t.Fatalf("hookd serve after SIGTERM: exit %d; log:\n%s", code, d2.log)
	}
}

// TestJournalConcurrentSteps: with max_concurrent 8, eight steps running
// at once each hold a slot of their own, naming their run and group; the
// file never holds more slots than steps ran at once, over many runs, and
// holds none once they are done.
func TestJournalConcurrentSteps(t *testing.T) {
	const n = 8
	hooks := map[string]string{"quick.yaml": crashOther}
	for i := 0; i < n; i++ {
		hooks[fmt.Sprintf("h%d.yaml", i)] = fmt.Sprintf(`steps:
  - type: shell
    command: 'echo $$ > h%d.pid; until [ -e release ]; do sleep 0.05; done'
skip_llm: true
`, i)
	}
	e := newEnv(t, "max_concurrent: 8\n", hooks)
	d := e.serve()
	ids := map[string]string{} // run id -> hook
	for i := 0; i < n; i++ {
		h := fmt.Sprintf("h%d", i)
		ids[runID(t, e.must(0, "fire", h))] = h
	}
	var es []procjournal.Entry
	waitFor(t, "eight steps in the journal, each with its pid written", func() bool {
		for i := 0; i < n; i++ {
			if pidIn(e, fmt.Sprintf("h%d.pid", i)) == 0 {
				return false // the group is in the journal before its shell writes $$
			}
		}
		var err error
		es, err = procjournal.Entries(journalPath(e))
		return err == nil && len(es) == n
	}, func() string { return fmt.Sprintf("entries %+v\n%s", es, d.log) })
	seen := map[string]bool{}
	for _, en := range es {
		h, ok := ids[en.Run]
		if !ok || seen[en.Run] {
			t.Errorf("entry %+v: not one of the runs fired, or twice", en)
			continue
		}
		seen[en.Run] = true
		if pid := pidIn(e, h+".pid"); pid != en.Group.PGID {
			t.Errorf("run %s of %s: journal names group %d, the step is %d", en.Run, h, en.Group.PGID, pid)
		}
	}
	e.write("release", "")
	for id := range ids {
		e.waitRun(id, engine.StatusCompleted)
	}
	for i := 0; i < 20; i++ {
		e.must(0, "fire", "quick", "--wait")
	}
	st, err := os.Stat(journalPath(e))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > n*procjournal.SlotSize {
		t.Errorf("journal after %d runs, at most %d at once: %d bytes, want at most %d", n+20, n, st.Size(), n*procjournal.SlotSize)
	}
	if es, err := procjournal.Entries(journalPath(e)); err != nil || len(es) != 0 {
		t.Errorf("every run done: journal holds %+v (%v)", es, err)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("hookd serve after SIGTERM: exit %d; log:\n%s", code, d.log)
	}
}

// TestHostileModelCannotWriteJournal performs the attack on the process
// journal against the real binary: a scripted model with write_file and
// read_file, from the project's workdir and from a hook whose workdir is
// the state directory itself, tries to write a slot into the journal
// (overwrite and append), to replace it, and to read it. Every call is
// refused; the journal stays empty.
func TestHostileModelCannotWriteJournal(t *testing.T) {
	slot := strings.Repeat("A", procjournal.SlotSize)
	call := func(id, name, args string) llmtest.ToolCall {
		return llmtest.ToolCall{ID: id, Name: name, Args: args}
	}
	attack := func(prefix, path string) llmtest.Reply {
		return llmtest.Calls(
			call(prefix+"_write", "write_file", `{"path":"`+path+`","content":"`+slot+`"}`),
			call(prefix+"_append", "write_file", `{"path":"`+path+`","content":"`+slot+`","append":true}`),
			call(prefix+"_read", "read_file", `{"path":"`+path+`"}`),
		)
	}
	model := llmtest.New(attack("wide", ".hookd/hookd.db.procs"), llmtest.Answer("done"),
		attack("inside", "hookd.db.procs"), llmtest.Answer("done"))
	defer model.Close()
	hook := func(extra string) string {
		return "llm: {model: m, base_url: " + model.BaseURL() + "}\nprompt: tidy up\ntools: [write_file, read_file]\nwrite_roots: [.]\n" + extra
	}
	e := newEnv(t, "", map[string]string{"wide.yaml": hook(""), "inside.yaml": hook("workdir: .hookd\n")})
	d := e.serve()
	for _, name := range []string{"wide", "inside"} {
		run, calls := e.firstRound(name)
		if len(calls) != 3 {
			t.Fatalf("%s: %d tool calls, want 3: %s", name, len(calls), run.ToolCalls)
		}
		for _, c := range calls {
			if !strings.Contains(c.Error, "refused") {
				t.Errorf("%s: %s was not refused: result %q error %q", name, c.ID, c.Result, c.Error)
			}
		}
	}
	if st, err := os.Stat(journalPath(e)); err != nil || st.Size() != 0 {
		t.Errorf("journal after the attack: %v, %v; want it there and empty", st, err)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("hookd serve after SIGTERM: exit %d; log:\n%s", code, d.log)
	}
}

// TestJournalModelTool: a command the model's run_command tool runs is in
// the journal as step -1 while it runs, and gone once it ended.
func TestJournalModelTool(t *testing.T) {
	model := llmtest.New(llmtest.Calls(llmtest.ToolCall{ID: "c", Name: "run_command",
		Args: `{"argv":["sh","-c","echo $$ > tool.pid; until [ -e release ]; do sleep 0.05; done"]}`}), llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "", map[string]string{
		"agent.yaml": "llm: {model: m, base_url: " + model.BaseURL() + "}\nprompt: run it\ntools: [run_command]\nwrite_roots: [.]\n",
	})
	d := e.serve()
	id := runID(t, e.must(0, "fire", "agent"))
	var es []procjournal.Entry
	waitFor(t, "the tool's command in the journal", func() bool {
		var err error
		es, err = procjournal.Entries(journalPath(e))
		return err == nil && len(es) == 1 && pidIn(e, "tool.pid") > 0
	}, func() string { return fmt.Sprintf("entries %+v\n%s", es, d.log) })
	if es[0].Run != id || es[0].Group.Step != -1 || es[0].Group.PGID != pidIn(e, "tool.pid") {
		t.Errorf("journal %+v; want run %s, step -1, group %d", es, id, pidIn(e, "tool.pid"))
	}
	e.write("release", "")
	e.waitRun(id, engine.StatusCompleted)
	if es, err := procjournal.Entries(journalPath(e)); err != nil || len(es) != 0 {
		t.Errorf("the run done: journal holds %+v (%v)", es, err)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("hookd serve after SIGTERM: exit %d; log:\n%s", code, d.log)
	}
}

// TestReapAfterCrashInRecovery: a hookd that died after recovery
// committed a run interrupted but before it killed the run's process
// group (the journal still names the group; the run is no longer
// running, so RecoverInterrupted does not return it) leaves the group to
// the next start, which kills it and says so in the run's record.
func TestReapAfterCrashInRecovery(t *testing.T) {
	e := newProcEnv(t, "", map[string]string{"long.yaml": journalLong})
	d := e.serve()
	id, leader, grand := fireLong(t, e, d)
	d.signal(syscall.SIGKILL)
	if code := d.wait(); code != -1 {
		t.Fatalf("hookd serve killed by SIGKILL: exit code %d", code)
	}
	t.Cleanup(func() { _ = syscall.Kill(-leader, syscall.SIGKILL) })
	// What a hookd that died inside recovery leaves: the run committed
	// interrupted, the journal not reset.
	raw, err := sql.Open("sqlite3", e.path(".hookd/hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := raw.Exec(`UPDATE runs SET status = 'interrupted', reason = 'hookd stopped while the run was in flight' WHERE id = ? AND status = 'running'`, id)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("mark run %s interrupted: %d rows, %v", id, n, err)
	}
	raw.Close()
	if es, err := procjournal.Entries(journalPath(e)); err != nil || len(es) != 1 || es[0].Run != id {
		t.Fatalf("journal after the crash: %+v, %v; want run %s's group", es, err, id)
	}

	d2 := e.serve()
	waitFor(t, "the step's processes to be killed", func() bool {
		return testtool.ProcessGone(leader) && testtool.ProcessGone(grand)
	}, func() string { return d2.log.String() })
	text := e.must(0, "run", id).stdout
	for _, want := range []string{"at the next start hookd killed", strconv.Itoa(grand) + " (sleep)"} {
		if !strings.Contains(text, want) {
			t.Errorf("`hookd run %s` does not say %q:\n%s", id, want, text)
		}
	}
	d2.signal(syscall.SIGTERM)
	if code := d2.wait(); code != 0 {
		t.Fatalf("hookd serve after SIGTERM: exit %d; log:\n%s", code, d2.log)
	}
}
