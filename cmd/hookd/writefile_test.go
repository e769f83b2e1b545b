package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestHostileModelCannotTakeOverHookd performs the takeover of issue 10
// against the real binary, with no hookd.yaml present and a scripted
// hostile model: it writes a hooks directory of its own, a hookd.yaml
// pointing hookd at it, an fsmonitor into .git/config, a hook into
// hooks.d and a file into the state directory. One hook may write only
// in out/; the other, which may write in the whole workdir, tries all
// but the first. Every attack is refused and
// nothing is written; the one legitimate write lands; hookd, started
// again, still reads only its own hooks.
func TestHostileModelCannotTakeOverHookd(t *testing.T) {
	attack := func(prefix string) llmtest.Reply {
		call := func(id, args string) llmtest.ToolCall {
			return llmtest.ToolCall{ID: prefix + "_" + id, Name: "write_file", Args: args}
		}
		calls := []llmtest.ToolCall{
			call("settings", `{"path":"hookd.yaml","content":"hooks_dir: evil.d\n"}`),
			call("fsmonitor", `{"path":".git/config","content":"[core]\n\tfsmonitor = \"touch pwned\"\n","append":true}`),
			call("hook", `{"path":"hooks.d/pwn.yaml","content":"prompt: pwned\n"}`),
			call("state", `{"path":".hookd/pwn","content":"x"}`),
			call("legit", `{"path":"out/`+prefix+`.md","content":"fine\n","create_dirs":true}`),
		}
		if prefix == "narrow" {
			// Outside its write_roots; the wide hook may write it, and
			// it does no harm while hookd.yaml cannot point at it.
			calls = append(calls, call("pwn", `{"path":"evil.d/pwn.yaml","content":"prompt: pwned\ntools: [run_command]\n","create_dirs":true}`))
		}
		return llmtest.Calls(calls...)
	}
	model := llmtest.New(attack("narrow"), llmtest.Answer("done"), attack("wide"), llmtest.Answer("done"))
	defer model.Close()
	hook := func(roots string) string {
		return "llm: {model: m, base_url: " + model.BaseURL() + "}\nprompt: tidy up\ntools: [write_file]\nwrite_roots: " + roots + "\n"
	}
	e := newEnv(t, "", map[string]string{"narrow.yaml": hook("[out]"), "wide.yaml": hook("[.]")})
	if err := os.MkdirAll(e.path(".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write(".git/config", "[core]\n\tbare = false\n")
	hooksBefore := e.must(0, "validate").stdout

	for _, name := range []string{"narrow", "wide"} {
		_, calls := e.firstRound(name)
		for _, c := range calls {
			ok := strings.HasSuffix(c.ID, "_legit")
			switch {
			case ok && c.Error != "":
				t.Errorf("%s: the legitimate write failed: %s", name, c.Error)
			case !ok && !strings.Contains(c.Error, "refused"):
				t.Errorf("%s: %s was not refused: result %q error %q", name, c.ID, c.Result, c.Error)
			}
		}
		if !e.exists("out/" + name + ".md") {
			t.Errorf("%s: the legitimate write did not land", name)
		}
	}

	if b, _ := os.ReadFile(e.path("hookd.yaml")); string(b) != "# defaults\n" {
		t.Errorf("hookd.yaml holds %q", b)
	}
	for _, p := range []string{"evil.d", "hooks.d/pwn.yaml", ".hookd/pwn", "pwned"} {
		if _, err := os.Lstat(e.path(p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if b, _ := os.ReadFile(e.path(".git/config")); string(b) != "[core]\n\tbare = false\n" {
		t.Errorf(".git/config holds %q", b)
	}
	if left, _ := filepath.Glob(e.path("out/.hookd-write-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if after := e.must(0, "validate").stdout; after != hooksBefore {
		t.Errorf("hookd reads other hooks now:\nbefore: %s\nafter: %s", hooksBefore, after)
	}
}

// TestProtectedPaths checks what cmd/hookd tells the tools they may not
// write or read: the settings file even when none was read, the token
// file, the state directory and the database's files.
func TestProtectedPaths(t *testing.T) {
	dir := t.TempDir()
	d, err := config.LoadDaemonFile(filepath.Join(dir, "hookd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d.TokenFile = filepath.Join(dir, "secrets", "token")
	got := d.OwnPaths()
	db := filepath.Join(dir, ".hookd", "hookd.db")
	want := []string{filepath.Join(dir, "hookd.yaml"), filepath.Join(dir, "secrets", "token"), filepath.Join(dir, ".hookd"),
		db, db + "-wal", db + "-shm", db + "-journal", db + ".lock", db + ".procs", filepath.Join(dir, ".hookd", "hookd.sock")}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("protected:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestHostileModelCannotReadSecrets performs the read attack of issue
// 10 against the real binary: a scripted model with read_file and
// list_files asks for hookd's API token file, its settings, its database
// and the workdir's .env, directly and through a symbolic link. Every
// read is refused; nothing of the token or the key is in the run record
// or in what was sent back to the model.
func TestHostileModelCannotReadSecrets(t *testing.T) {
	const token, key = "hkd-e2e-7d1c0ffee", "sk-e2e-9a8b7c"
	call := func(id, name, args string) llmtest.ToolCall {
		return llmtest.ToolCall{ID: id, Name: name, Args: args}
	}
	model := llmtest.New(llmtest.Calls(
		call("token", "read_file", `{"path":"secrets/token"}`),
		call("link", "read_file", `{"path":"data/t"}`),
		call("settings", "read_file", `{"path":"hookd.yaml"}`),
		call("db", "read_file", `{"path":".hookd/hookd.db"}`),
		call("env", "read_file", `{"path":".env"}`),
		call("state", "list_files", `{"path":".hookd"}`),
	), llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "listen: 127.0.0.1:0\ntoken_file: secrets/token\n", map[string]string{
		"curious.yaml": "llm: {model: m, base_url: " + model.BaseURL() + "}\nprompt: look around\ntools: [read_file, list_files]\n",
	})
	for _, d := range []string{"secrets", "data"} {
		if err := os.Mkdir(e.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.write("secrets/token", token+"\n")
	e.write(".env", "OPENAI_API_KEY="+key+"\n")
	if err := os.Symlink(e.path("secrets/token"), e.path("data/t")); err != nil {
		t.Fatal(err)
	}
	run, calls := e.firstRound("curious")
	for _, c := range calls {
		if !strings.Contains(c.Error, "refused") {
			t.Errorf("%s was not refused: result %q error %q", c.ID, c.Result, c.Error)
		}
	}
	record := e.must(0, "run", run.ID, "--json").stdout
	sent := ""
	for _, r := range model.Requests() {
		sent += string(r.Raw)
	}
	for _, s := range []string{token, "hkd-e2e", key, "sk-e2e"} {
		if strings.Contains(record, s) || strings.Contains(sent, s) {
			t.Errorf("%q leaked (record: %v, sent to the model: %v)", s, strings.Contains(record, s), strings.Contains(sent, s))
		}
	}
}

// TestHostileModelCannotTouchSymlinkedDatabaseLog performs the attack on
// a database opened through a symbolic link (db: state/hookd.db, a link
// to data/hookd.db in the hook's workdir, where it may write): SQLite
// keeps the -wal and -shm files beside the target, and a scripted model
// with read_file and write_file goes for them there, and for the journal
// SQLite would make there, while the daemon has them open. Every call is
// refused as hookd's own file, and nothing is written.
func TestHostileModelCannotTouchSymlinkedDatabaseLog(t *testing.T) {
	call := func(id, name, args string) llmtest.ToolCall {
		return llmtest.ToolCall{ID: id, Name: name, Args: args}
	}
	model := llmtest.New(llmtest.Calls(
		call("read_wal", "read_file", `{"path":"data/hookd.db-wal"}`),
		call("read_shm", "read_file", `{"path":"data/hookd.db-shm"}`),
		call("write_wal", "write_file", `{"path":"data/hookd.db-wal","content":"pwned"}`),
		call("write_shm", "write_file", `{"path":"data/hookd.db-shm","content":"pwned"}`),
		call("write_journal", "write_file", `{"path":"data/hookd.db-journal","content":"pwned"}`),
	), llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "db: state/hookd.db\n", map[string]string{
		"curious.yaml": "llm: {model: m, base_url: " + model.BaseURL() + "}\nprompt: look around\ntools: [read_file, write_file]\nwrite_roots: [data]\n",
	})
	for _, d := range []string{"state", "data"} {
		if err := os.Mkdir(e.path(d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(e.path("data/hookd.db"), e.path("state/hookd.db")); err != nil {
		t.Fatal(err)
	}
	e.serve() // stopped at cleanup
	_, calls := e.firstRound("curious")
	if n := len(calls); n != 5 {
		t.Fatalf("%d tool calls; want 5", n)
	}
	for _, c := range calls {
		if !strings.Contains(c.Error, "refused") || !strings.Contains(c.Error, "hookd's own") {
			t.Errorf("%s was not refused as hookd's own file: result %d bytes, error %q", c.ID, len(c.Result), c.Error)
		}
	}
	for _, f := range []string{"data/hookd.db-wal", "data/hookd.db-shm", "data/hookd.db-journal"} {
		if b, err := os.ReadFile(e.path(f)); err == nil && string(b) == "pwned" {
			t.Errorf("%s was written", f)
		}
	}
	if left, _ := filepath.Glob(e.path("data/.hookd-write-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
