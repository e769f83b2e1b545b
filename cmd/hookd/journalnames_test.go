package main

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/internal/procjournal"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestHostileModelJournalOtherNames performs the attack on the process
// journal by other names than its own: through "..", "." components, an
// absolute path, a symbolic link to the state directory and a hard link
// to the journal planted in the workdir (what an earlier step could have
// left). A scripted model with write_file tries to write a slot through
// each; every call is refused and the journal stays empty.
func TestHostileModelJournalOtherNames(t *testing.T) {
	slot := strings.Repeat("A", procjournal.SlotSize)
	e := newEnv(t, "", nil)
	abs := journalPath(e)
	paths := []string{
		"sub/../.hookd/hookd.db.procs",
		"./.hookd/./hookd.db.procs",
		abs,
		"state/hookd.db.procs", // state -> .hookd
		"hard.procs",           // a hard link to the journal
	}
	var calls []llmtest.ToolCall
	for i, p := range paths {
		calls = append(calls, llmtest.ToolCall{ID: "w" + string(rune('0'+i)), Name: "write_file",
			Args: `{"path":"` + p + `","content":"` + slot + `"}`})
	}
	model := llmtest.New(llmtest.Calls(calls...), llmtest.Answer("done"))
	defer model.Close()
	e.write("hooks.d/hostile.yaml", "llm: {model: m, base_url: "+model.BaseURL()+"}\nprompt: tidy up\ntools: [write_file]\nwrite_roots: [.]\n")
	if err := os.MkdirAll(e.path("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".hookd", e.path("state")); err != nil {
		t.Fatal(err)
	}
	d := e.serve()
	waitFor(t, "the journal to exist", func() bool { _, err := os.Stat(abs); return err == nil },
		func() string { return d.log.String() })
	if err := os.Link(abs, e.path("hard.procs")); err != nil {
		t.Fatal(err)
	}
	run := e.getRun(runID(t, e.must(0, "fire", "hostile", "--wait")))
	tr, err := agent.DecodeTranscript(run)
	if err != nil || tr == nil || len(tr.Rounds) == 0 || len(tr.Rounds[0].ToolCalls) != len(paths) {
		t.Fatalf("%s %q; transcript %v: %s", run.Status, run.Error, err, run.ToolCalls)
	}
	for _, c := range tr.Rounds[0].ToolCalls {
		if c.Error == "" {
			t.Errorf("%s was not refused: result %q", c.ID, c.Result)
		}
	}
	if st, err := os.Stat(abs); err != nil || st.Size() != 0 {
		t.Errorf("journal after the attack: %v, %v; want it there and empty", st, err)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("hookd serve after SIGTERM: exit %d; log:\n%s", code, d.log)
	}
}
