package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// The token and every other secret the read attack goes after; none of
// them may appear in any tool result.
const (
	readToken = "hkd_tok_7f3a9c" // hookd's API token
	readDB    = "SQLite format 3 row:secret-run-output"
	readKey   = "-----BEGIN OPENSSH PRIVATE KEY-----"
	readEnv   = "OPENAI_API_KEY=sk-live-123"
)

// secretLayout is a workdir that holds hookd's own files (settings,
// token, state directory, a database named on its own) and credential
// stores, protected as cmd/hookd protects them.
func secretLayout(t *testing.T) (*engine.ToolEnv, string) {
	t.Helper()
	work := realDir(t)
	writeTree(t, work, map[string]string{
		"hookd.yaml":           "token_file: token\n",
		"token":                readToken + "\n",
		".hookd/hookd.db":      readDB,
		".hookd/hookd.db-wal":  readDB,
		"hooks.d/review.yaml":  "prompt: review\n",
		".env":                 readEnv + "\n",
		".env.local":           readEnv + "\n",
		"app/.ENV":             readEnv + "\n",
		".ssh/id_ed25519":      readKey + "\n",
		".gnupg/secring.gpg":   readKey + "\n",
		".netrc":               "machine api login me password " + readToken + "\n",
		".git-credentials":     "https://me:" + readToken + "@example.com\n",
		".aws/credentials":     "aws_secret_access_key=" + readToken + "\n",
		"docs/readme.md":       "hello\n",
		"sub/state/hookd.db":   readDB, // a database named on its own, in a directory that holds the workdir's files
		"sub/state/notes.md":   "fine\n",
		"data/placeholder.txt": "x\n",
	})
	// Other names for the same secrets: symbolic links and a hard link.
	for link, target := range map[string]string{
		"data/tok":      filepath.Join(work, "token"),
		"data/state":    filepath.Join(work, ".hookd"),
		"data/keys":     filepath.Join(work, ".ssh"),
		"data/dotenv":   filepath.Join(work, ".env"),
		"data/settings": filepath.Join(work, "hookd.yaml"),
	} {
		if err := os.Symlink(target, filepath.Join(work, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(work, "token"), filepath.Join(work, "data", "hard")); err != nil {
		t.Fatal(err)
	}
	env := &engine.ToolEnv{
		Hook: &engine.Hook{Name: "curious"}, RunID: "R1", Workdir: work,
		HooksDir: filepath.Join(work, "hooks.d"),
		Protected: []string{filepath.Join(work, "hookd.yaml"), filepath.Join(work, "token"), filepath.Join(work, ".hookd"),
			filepath.Join(work, "sub", "state", "hookd.db")},
	}
	return env, work
}

// noSecret fails when a tool result holds any part of a secret.
func noSecret(t *testing.T, what, out string) {
	t.Helper()
	for _, s := range []string{readToken, "hkd_tok", readDB, "OPENSSH", "sk-live", "aws_secret"} {
		if strings.Contains(out, s) {
			t.Errorf("%s leaked %q: %q", what, s, out)
		}
	}
}

// TestReadFileRefusesSecrets performs the read attack of issue 10: a
// model with read_file and list_files goes after hookd's API token, its
// settings, its database and the credential stores in the workdir, by
// name, through "..", absolute paths, case, symbolic links and a hard
// link. Every read is refused and nothing of a secret is in any result.
func TestReadFileRefusesSecrets(t *testing.T) {
	env, work := secretLayout(t)
	for _, tc := range []struct{ path, want string }{
		{"token", "tools cannot read it"},
		{"./token", "tools cannot read it"},
		{"docs/../token", "tools cannot read it"},
		{work + "/token", "tools cannot read it"},
		{"hookd.yaml", "tools cannot read it"},
		{".hookd/hookd.db", "tools cannot read it"},
		{".hookd/hookd.db-wal", "tools cannot read it"},
		{"sub/state/hookd.db", "tools cannot read it"},
		{"data/tok", "is a symbolic link"},
		{"data/settings", "is a symbolic link"},
		{"data/state/hookd.db", "is a symbolic link"},
		{"data/hard", "tools cannot read it"},
		{".env", "holds credentials"},
		{".env.local", "holds credentials"},
		{"app/.ENV", "holds credentials"},
		{"data/dotenv", "is a symbolic link"},
		{".ssh/id_ed25519", "holds credentials"},
		{"data/keys/id_ed25519", "is a symbolic link"},
		{".gnupg/secring.gpg", "holds credentials"},
		{".netrc", "holds credentials"},
		{".git-credentials", "holds credentials"},
		{".aws/credentials", "holds credentials"},
	} {
		out, err := call(t, env, "read_file", `{"path":"`+tc.path+`"}`)
		noSecret(t, "read_file "+tc.path, out)
		if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("read_file %s: got %q, %v; want a refusal saying %q", tc.path, out, err, tc.want)
			continue
		}
		noSecret(t, "read_file "+tc.path+" error", err.Error())
	}
	for _, dir := range []string{".hookd", "data/state", ".ssh", "data/keys", ".aws"} {
		out, err := call(t, env, "list_files", `{"path":"`+dir+`","recursive":true}`)
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("list_files %s: got %q, %v; want a refusal", dir, out, err)
		}
		noSecret(t, "list_files "+dir, out)
	}

	// The whole tree: protected entries are named but not entered.
	all := mustCall(t, env, "list_files", `{"recursive":true}`)
	for _, name := range []string{"token", ".hookd/", ".ssh/", ".env", "sub/state/hookd.db"} {
		if !strings.Contains(all, name+" (protected: tools cannot read it)") {
			t.Errorf("list_files does not mark %s protected:\n%s", name, all)
		}
	}
	for _, inside := range []string{".hookd/hookd.db", ".ssh/id_ed25519", ".aws/credentials"} {
		if strings.Contains(all, inside) {
			t.Errorf("list_files entered a protected directory (%s):\n%s", inside, all)
		}
	}

	// What stays readable: ordinary files, the hooks (by design), and the
	// other files of a directory that holds a database.
	for path, want := range map[string]string{
		"docs/readme.md":      "hello\n",
		"hooks.d/review.yaml": "prompt: review\n",
		"sub/state/notes.md":  "fine\n",
	} {
		if got := mustCall(t, env, "read_file", `{"path":"`+path+`"}`); got != want {
			t.Errorf("read_file %s = %q, want %q", path, got, want)
		}
	}
}

// TestReadFileStateDirIsWorkdir: with db: hookd.db next to hookd.yaml,
// the state directory is the workdir itself. The workdir stays readable;
// the database and its sidecars, named on their own, do not.
func TestReadFileStateDirIsWorkdir(t *testing.T) {
	work := realDir(t)
	writeTree(t, work, map[string]string{"hookd.db": readDB, "hookd.db-wal": readDB, "notes.md": "ok\n"})
	db := filepath.Join(work, "hookd.db")
	env := &engine.ToolEnv{Hook: &engine.Hook{Name: "h"}, RunID: "R1", Workdir: work,
		Protected: []string{filepath.Join(work, "hookd.yaml"), work, db, db + "-wal", db + "-shm"}}
	if got := mustCall(t, env, "read_file", `{"path":"notes.md"}`); got != "ok\n" {
		t.Errorf("notes.md = %q", got)
	}
	for _, p := range []string{"hookd.db", "hookd.db-wal"} {
		out, err := call(t, env, "read_file", `{"path":"`+p+`"}`)
		noSecret(t, p, out)
		if err == nil || !strings.Contains(err.Error(), "tools cannot read it") {
			t.Errorf("read_file %s: got %q, %v", p, out, err)
		}
	}
	if got := mustCall(t, env, "list_files", `{}`); !strings.Contains(got, "hookd.db (protected") || !strings.Contains(got, "notes.md (3 bytes)") {
		t.Errorf("list_files: %q", got)
	}
}
