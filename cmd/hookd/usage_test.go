package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hookd/hookd/config"
)

// commonFlags are the flags every command takes; the usage line says so
// once, under the list.
var commonFlags = []string{"--config", "--db", "--hooks", "--color"}

// cliCommands returns the lines of docs/cli.md's command synopsis (the
// first code block after "## Commands") by command name.
func cliCommands(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatalf("read docs/cli.md: %v", err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Commands\n")
	if !ok {
		t.Fatal("docs/cli.md has no ## Commands section")
	}
	_, block, ok := strings.Cut(sec, "```\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("docs/cli.md's ## Commands section has no code block")
	}
	lines := map[string]string{}
	for _, l := range strings.Split(block, "\n") {
		// "hookd pause NAME | hookd resume NAME" documents two commands.
		for _, part := range strings.Split(l, " | hookd ") {
			f := strings.Fields(strings.TrimPrefix(part, "hookd "))
			if len(f) > 0 {
				lines[f[0]] = part
			}
		}
	}
	return lines
}

// flagWord finds a flag as it is written in a synopsis: --name or -n.
var flagWord = regexp.MustCompile(`(?:^|[\s\[|])(--?[a-z][a-z-]*)`)

// TestUsageListsEveryFlag checks that each command's synopsis — in
// `hookd --help` and in docs/cli.md's Commands block — names every flag the
// command takes and no flag it does not take.
func TestUsageListsEveryFlag(t *testing.T) {
	synopsis := cliCommands(t)
	for _, cmd := range commands {
		flags := commandFlags(cmd)
		line, documented := synopsis[cmd.name]
		if !documented {
			t.Errorf("docs/cli.md's Commands block has no line for hookd %s", cmd.name)
		}
		for _, f := range flags {
			if slices.Contains(commonFlags, f) {
				continue
			}
			short := strings.TrimPrefix(f, "-") // -n is written with one dash
			if !strings.Contains(" "+cmd.args+" ", f) && !(len(short) == 2 && strings.Contains(cmd.args, short+" ")) {
				t.Errorf("hookd --help: %s %s does not list %s", cmd.name, cmd.args, f)
			}
			if documented && !strings.Contains(line, f) && !(len(short) == 2 && strings.Contains(line, short+" ")) {
				t.Errorf("docs/cli.md: %q does not list %s", line, f)
			}
		}
		for _, text := range []string{cmd.args, line} {
			for _, m := range flagWord.FindAllStringSubmatch(text, -1) {
				w := m[1]
				if !strings.HasPrefix(w, "--") {
					w = "-" + w
				}
				if !slices.Contains(flags, w) {
					t.Errorf("%q names %s, which hookd %s does not take (it takes %s)", text, m[1], cmd.name, strings.Join(flags, " "))
				}
			}
		}
	}
}

// docBlock returns the first ```yaml block after heading in file, a
// path from the repository's root (README.md, docs/hooks.md).
func docBlock(t *testing.T, file, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	_, sec, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q", file, heading)
	}
	_, blk, ok := strings.Cut(sec, "```yaml\n")
	blk, _, ok2 := strings.Cut(blk, "```")
	if !ok || !ok2 {
		t.Fatalf("%s's %q has no yaml block", file, heading)
	}
	return blk
}

// docFiles returns the user documentation whose examples the tests load:
// README.md and docs/*.md, as paths from the repository's root.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		files = append(files, filepath.ToSlash(strings.TrimPrefix(d, "../../")))
	}
	return files
}

// namedHookFile finds the hook file a paragraph names: `hooks.d/NAME.yaml`.
var namedHookFile = regexp.MustCompile("`hooks\\.d/([A-Za-z0-9_.-]+\\.ya?ml)`")

// yamlBlock is a ```yaml block of a documentation file.
var yamlBlock = regexp.MustCompile("(?ms)^```ya?ml\n(.*?)^```")

// docHookFiles returns the hook files the README and docs/*.md give as
// files to write: each ```yaml block whose paragraph before it names
// `hooks.d/NAME.yaml`, by NAME.yaml, with where it was found.
func docHookFiles(t *testing.T) (hooks, where map[string]string) {
	t.Helper()
	hooks, where = map[string]string{}, map[string]string{}
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join("..", "..", file))
		if err != nil {
			t.Fatalf("read %s: %v", file, err)
		}
		text := string(b)
		for _, m := range yamlBlock.FindAllStringSubmatchIndex(text, -1) {
			before := strings.TrimRight(text[:m[0]], "\n")
			if i := strings.LastIndex(before, "\n\n"); i >= 0 {
				before = before[i:]
			}
			name := namedHookFile.FindStringSubmatch(before)
			if name == nil {
				continue
			}
			at := fmt.Sprintf("%s:%d", file, strings.Count(text[:m[0]], "\n")+1)
			if prev, dup := where[name[1]]; dup {
				t.Fatalf("%s and %s both give hooks.d/%s", prev, at, name[1])
			}
			hooks[name[1]], where[name[1]] = text[m[2]:m[3]], at
		}
	}
	return hooks, where
}

// TestDocExamplesLoad checks that the hook files a reader copies from the
// README and docs/*.md load as written: the README's first hook and its
// common jobs, every other block the docs give as `hooks.d/NAME.yaml`,
// and the reference of every key in docs/hooks.md (which holds no key of
// hookd.yaml).
func TestDocExamplesLoad(t *testing.T) {
	hooks, where := docHookFiles(t)
	for _, name := range []string{"tests.yaml", "disk.yaml", "deploy-triage.yaml", "proofread.yaml", "backup.yaml", "weekly-note.yaml"} {
		if _, ok := hooks[name]; !ok {
			t.Errorf("the README gives no hooks.d/%s (found %v)", name, slices.Sorted(maps.Keys(hooks)))
		}
	}
	hooks["test-triage.yaml"] = docBlock(t, "docs/hooks.md", "## Hook files")
	where["test-triage.yaml"] = "docs/hooks.md, ## Hook files"
	// The hook files' example lists github.search_issues: hookd.yaml
	// declares the server, as docs/daemon.md's does.
	e := newEnv(t, "llm: {model: test-model, base_url: http://127.0.0.1:1/v1}\nmcp_servers:\n  github: {command: [github-mcp-server, stdio]}\n", hooks)
	r := e.run("validate")
	if want := fmt.Sprintf("%d hook(s) valid", len(hooks)); r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Errorf("validate the docs' hooks (%v): want %q\n%s", where, want, r)
	}
	e.must(0, "next", "tests")
}

// TestUsageCommonFlags checks the line under `hookd --help` that names the
// commands without --config, --db and --hooks against the commands' flags.
func TestUsageCommonFlags(t *testing.T) {
	for _, cmd := range commands {
		flags := commandFlags(cmd)
		has := 0
		for _, f := range commonFlags {
			if slices.Contains(flags, f) {
				has++
			}
		}
		if excepted := slices.Contains(noCommonFlags, cmd.name); excepted && has != 0 || !excepted && has != len(commonFlags) {
			t.Errorf("hookd %s takes %s; --help says it %s --config, --db and --hooks", cmd.name, strings.Join(flags, " "),
				map[bool]string{true: "does not take", false: "takes"}[excepted])
		}
	}
}

// docSettings is the hookd.yaml the docs' hook files are checked
// against: a model for their prompts, and the MCP server whose tools the
// reference hook file lists.
const docSettings = "llm: {model: test-model, base_url: http://127.0.0.1:1/v1}\nmcp_servers:\n  github: {command: [github-mcp-server, stdio]}\n"

// docBlockParts splits a yaml block into what must load on its own: the
// block, or, when it gives a top-level key more than once (a list of
// alternatives: `llm:` for each model server, each after a comment
// naming the server), each line that gives one.
func docBlockParts(blk string) []string {
	seen, dup := map[string]bool{}, false
	var keys []string
	for _, l := range strings.Split(blk, "\n") {
		if k, _, ok := strings.Cut(l, ":"); ok && l != "" && l[0] != ' ' && l[0] != '#' && l[0] != '-' {
			dup = dup || seen[k]
			seen[k] = true
			keys = append(keys, l)
		}
	}
	if !dup {
		return []string{blk}
	}
	return keys
}

// TestDocYAMLBlocksLoad checks every ```yaml block of README.md and
// docs/*.md: each loads as a hook file (or lifecycle handler), as the
// daemon loads hooks.d, or as hookd.yaml — as the kind its first line
// names when it names one (`# hooks.d/NAME.yaml`, `# hookd.yaml`). A
// misspelled key, a bad value or a key of the wrong file fails it.
func TestDocYAMLBlocksLoad(t *testing.T) {
	settings, err := config.LoadDaemon(strings.NewReader(docSettings), filepath.Join(t.TempDir(), "hookd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	asHook := func(src string) error {
		dir := filepath.Join(t.TempDir(), "hooks.d")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "example.yaml"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, errs := config.CheckDir(dir, settings.HookOptions())
		return errors.Join(errs...)
	}
	asSettings := func(src string) error {
		_, err := config.LoadDaemon(strings.NewReader(src), filepath.Join(t.TempDir(), "hookd.yaml"))
		return err
	}
	blocks := 0
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join("..", "..", file))
		if err != nil {
			t.Fatalf("read %s: %v", file, err)
		}
		text := string(b)
		for _, m := range yamlBlock.FindAllStringSubmatchIndex(text, -1) {
			blocks++
			at := fmt.Sprintf("%s:%d", file, strings.Count(text[:m[0]], "\n")+1)
			blk := text[m[2]:m[3]]
			first, _, _ := strings.Cut(blk, "\n")
			for _, part := range docBlockParts(blk) {
				hookErr, settingsErr := asHook(part), asSettings(part)
				switch {
				case strings.HasPrefix(first, "# hooks.d/"):
					if hookErr != nil {
						t.Errorf("%s: the block %q gives does not load:\n%v", at, first, hookErr)
					}
				case strings.HasPrefix(first, "# hookd.yaml"):
					if settingsErr != nil {
						t.Errorf("%s: the hookd.yaml block does not load:\n%v", at, settingsErr)
					}
				case hookErr != nil && settingsErr != nil:
					t.Errorf("%s: the yaml block loads neither as a hook file nor as hookd.yaml:\nas a hook file: %v\nas hookd.yaml: %v", at, hookErr, settingsErr)
				}
			}
		}
	}
	if blocks < 30 {
		t.Errorf("%d yaml blocks in README.md and docs/*.md: fewer than expected, is the fence pattern still right?", blocks)
	}
}
