package tools

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// noTempFiles fails when a temporary file of write_file is left below dir.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".hookd-write-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// tree lists every path below dir with its content, to compare before
// and after an attack.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		line := rel
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += ": " + string(b)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// daemonLayout is a workdir laid out as hookd's default: hooks.d/ and the
// state directory .hookd/ inside it, no hookd.yaml, a token file, and a
// git repository. The tool env protects them as cmd/hookd does.
func daemonLayout(t *testing.T, roots ...string) (*engine.ToolEnv, string) {
	t.Helper()
	work := realDir(t)
	writeTree(t, work, map[string]string{
		"hooks.d/victim.yaml": "prompt: original\n",
		".hookd/hookd.db":     "db",
		"token":               "s3cret\n",
		".git/config":         "[core]\n\tbare = false\n",
		"data/keep.txt":       "keep\n",
		"elsewhere/x.txt":     "x\n",
	})
	env := &engine.ToolEnv{
		Hook: &engine.Hook{Name: "hostile", WriteRoots: roots}, RunID: "R1", Workdir: work,
		HooksDir:  filepath.Join(work, "hooks.d"),
		Protected: []string{filepath.Join(work, "hookd.yaml"), filepath.Join(work, "token"), filepath.Join(work, ".hookd")},
	}
	return env, work
}

func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriteFileDaemonFiles performs the takeover of issue 10: with no
// hookd.yaml, the model writes a hooks directory of its own and a
// hookd.yaml pointing at it, then tries hookd's token and state. The
// hook's write_roots is the whole workdir, so only the protection of
// hookd's own paths stands in the way.
func TestWriteFileDaemonFiles(t *testing.T) {
	env, work := daemonLayout(t, ".")
	before := tree(t, work)
	for _, tc := range []struct{ args, want string }{
		{`{"path":"hookd.yaml","content":"hooks_dir: evil.d\n"}`, "tools cannot change it"},
		{`{"path":"./hookd.yaml","content":"hooks_dir: evil.d\n","append":true}`, "tools cannot change it"},
		{`{"path":"` + work + `/hookd.yaml","content":"hooks_dir: evil.d\n"}`, "tools cannot change it"},
		{`{"path":"token","content":"mine\n"}`, "tools cannot change it"},
		{`{"path":".hookd/hookd.db","content":"x"}`, "tools cannot change it"},
		{`{"path":".hookd/new/x","content":"x","create_dirs":true}`, "tools cannot change it"},
		{`{"path":"hooks.d/pwn.yaml","content":"prompt: pwned\n"}`, "tools cannot create or edit hooks"},
		{`{"path":"hooks.d/victim.yaml","content":"prompt: pwned\n"}`, "tools cannot create or edit hooks"},
		{`{"path":"data/../hooks.d/victim.yaml","content":"prompt: pwned\n"}`, "tools cannot create or edit hooks"},
	} {
		wantErr(t, env, "write_file", tc.args, tc.want)
	}
	if after := tree(t, work); after != before {
		t.Errorf("the attack changed the workdir:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := os.Lstat(filepath.Join(work, "hookd.yaml")); err == nil {
		t.Error("hookd.yaml was created")
	}
}

// TestWriteFileToolConfig performs the .git/config attack (an fsmonitor
// the next git step would run) and its relatives: nothing that configures
// a tool is written, whatever the case or depth, and no directory is made.
func TestWriteFileToolConfig(t *testing.T) {
	env, work := daemonLayout(t, ".")
	writeTree(t, work, map[string]string{"sub/.git/config": "", ".bashrc": "# rc\n"})
	before := tree(t, work)
	for _, p := range []string{
		".git/config", ".git/hooks/pre-commit", ".GIT/config", "sub/.git/config", ".git/info/attributes",
		".hg/hgrc", ".ssh/authorized_keys", ".config/git/config", ".local/bin/ls", ".gnupg/gpg.conf",
		".bashrc", ".profile", ".bash_profile", ".zshrc", ".zshenv", ".envrc", ".env", ".env.local", ".npmrc",
		".gitconfig", ".netrc", "data/.bashrc", ".husky/pre-commit", ".githooks/pre-push", ".vscode/tasks.json",
		".pre-commit-config.yaml",
		// Dot names no list knows, refused because no write root names
		// them, and Python's start-up files, refused by name.
		".cargo/config.toml", ".CARGO/config.toml", ".mise.toml", ".tool-versions", ".mvn/jvm.config",
		".mvn/wrapper/maven-wrapper.properties", ".gitattributes", ".gitmodules", "data/.gitattributes",
		".devcontainer/devcontainer.json", ".github/workflows/ci.yml", ".bashrc.d/x.sh", ".profile.d/x.sh",
		".direnv/bin/x", ".vim/plugin/x.vim", ".emacs.d/init.el", ".idea/workspace.xml", ".yarnrc.yml",
		".yarnrc", ".pnpmfile.cjs", ".pre-commit-hooks.yaml", ".Envrc",
		"sitecustomize.py", "lib/python3/site-packages/usercustomize.py", "SiteCustomize.py", "evil.pth",
		"data/lib/x.PTH",
	} {
		for _, extra := range []string{``, `,"append":true`, `,"create_dirs":true`} {
			wantErr(t, env, "write_file", `{"path":"`+p+`","content":"[core]\n\tfsmonitor = \"touch /tmp/pwned\"\n"`+extra+`}`, "configures tools that run programs")
		}
	}
	if after := tree(t, work); after != before {
		t.Errorf("the attack changed the workdir:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// Names that only look alike are written.
	mustCall(t, env, "write_file", `{"path":"data/git/config","content":"x","create_dirs":true}`)
	mustCall(t, env, "write_file", `{"path":"data/environment.md","content":"x"}`)
	mustCall(t, env, "write_file", `{"path":"data/site.py","content":"x"}`)
}

// TestWriteFileDotRoots checks that a dot-named directory is written when
// a write root names it, and only below that name: a dot name deeper down
// and a listed tool name stay refused.
func TestWriteFileDotRoots(t *testing.T) {
	env, work := daemonLayout(t, ".cache/reports", "data")
	mustCall(t, env, "write_file", `{"path":".cache/reports/a.md","content":"a","create_dirs":true}`)
	if b, _ := os.ReadFile(filepath.Join(work, ".cache/reports/a.md")); string(b) != "a" {
		t.Errorf(".cache/reports/a.md holds %q", b)
	}
	before := tree(t, work)
	for _, p := range []string{".cache/reports/.cargo/config.toml", "data/.github/workflows/ci.yml", ".cache/reports/sitecustomize.py"} {
		wantErr(t, env, "write_file", `{"path":"`+p+`","content":"x","create_dirs":true}`, "configures tools that run programs")
	}
	git, _ := daemonLayout(t, ".git")
	wantErr(t, git, "write_file", `{"path":".git/config","content":"x"}`, "configures tools that run programs")
	if after := tree(t, work); after != before {
		t.Errorf("refused writes changed the workdir:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestWriteFileHardLink performs the hard-link attack: a link made
// beforehand from data/ to a hook file. Neither replacing nor appending
// touches the hook; a file with two links is refused even when neither
// name is protected.
func TestWriteFileHardLink(t *testing.T) {
	env, work := daemonLayout(t, "data")
	victim := filepath.Join(work, "hooks.d", "victim.yaml")
	if err := os.Link(victim, filepath.Join(work, "data", "hl.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(work, "data", "keep.txt"), filepath.Join(work, "data", "keep2.txt")); err != nil {
		t.Fatal(err)
	}
	before := tree(t, work)
	wantErr(t, env, "write_file", `{"path":"data/hl.yaml","content":"prompt: pwned\n"}`, "has 2 hard links")
	wantErr(t, env, "write_file", `{"path":"data/hl.yaml","content":"prompt: pwned\n","append":true}`, "has 2 hard links")
	wantErr(t, env, "write_file", `{"path":"data/keep2.txt","content":"x"}`, "has 2 hard links")
	if after := tree(t, work); after != before {
		t.Errorf("the attack changed the workdir:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if b, _ := os.ReadFile(victim); string(b) != "prompt: original\n" {
		t.Errorf("victim holds %q", b)
	}
}

// TestWriteFileRoots checks write_roots: inside them write_file writes
// and makes directories; outside them, and for a hook that lists none, it
// refuses and makes nothing.
func TestWriteFileRoots(t *testing.T) {
	env, work := daemonLayout(t, "data", "out/reports")
	mustCall(t, env, "write_file", `{"path":"data/a.txt","content":"a"}`)
	mustCall(t, env, "write_file", `{"path":"out/reports/2024/b.md","content":"b","create_dirs":true}`)
	if b, _ := os.ReadFile(filepath.Join(work, "out/reports/2024/b.md")); string(b) != "b" {
		t.Errorf("b.md holds %q", b)
	}
	before := tree(t, work)
	wantErr(t, env, "write_file", `{"path":"README.md","content":"x"}`, "outside this hook's write_roots (data, out/reports)")
	wantErr(t, env, "write_file", `{"path":"elsewhere/x.txt","content":"x"}`, "outside this hook's write_roots")
	wantErr(t, env, "write_file", `{"path":"out/x.md","content":"x"}`, "outside this hook's write_roots")
	wantErr(t, env, "write_file", `{"path":"data2/x.md","content":"x","create_dirs":true}`, "outside this hook's write_roots")
	wantErr(t, env, "write_file", `{"path":"data/../elsewhere/x.txt","content":"x"}`, "outside this hook's write_roots")
	if after := tree(t, work); after != before {
		t.Errorf("refused writes changed the workdir:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// A link inside a root to a place outside it is not followed.
	if err := os.Symlink("../elsewhere", filepath.Join(work, "data", "link")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, env, "write_file", `{"path":"data/link/x.txt","content":"x"}`, "is a symbolic link")
	if b, _ := os.ReadFile(filepath.Join(work, "elsewhere/x.txt")); string(b) != "x\n" {
		t.Errorf("elsewhere/x.txt holds %q", b)
	}

	none, _ := daemonLayout(t)
	wantErr(t, none, "write_file", `{"path":"data/a.txt","content":"a"}`, "lists no write_roots, so write_file may write nowhere")
}
