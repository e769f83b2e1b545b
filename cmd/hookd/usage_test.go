package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// commonFlags are the flags every command takes; the usage line says so
// once, under the list.
var commonFlags = []string{"--config", "--db", "--hooks", "--color"}

// readmeCommands returns the lines of the README's command synopsis (the
// first code block after "## Commands") by command name.
func readmeCommands(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Commands\n")
	if !ok {
		t.Fatal("README has no ## Commands section")
	}
	_, block, ok := strings.Cut(sec, "```\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("README's ## Commands section has no code block")
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
// `hookd --help` and in the README's Commands block — names every flag the
// command takes and no flag it does not take.
func TestUsageListsEveryFlag(t *testing.T) {
	readme := readmeCommands(t)
	for _, cmd := range commands {
		flags := commandFlags(cmd)
		line, documented := readme[cmd.name]
		if !documented {
			t.Errorf("README's Commands block has no line for hookd %s", cmd.name)
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
				t.Errorf("README: %q does not list %s", line, f)
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

// readmeBlock returns the first ```yaml block after heading in the README.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	_, sec, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q", heading)
	}
	_, blk, ok := strings.Cut(sec, "```yaml\n")
	blk, _, ok2 := strings.Cut(blk, "```")
	if !ok || !ok2 {
		t.Fatalf("README's %q has no yaml block", heading)
	}
	return blk
}

// TestReadmeExamplesLoad checks that the hook file a newcomer copies from
// the README — the first hook and the reference of every key — loads as
// written, and that the reference hook file holds no key of hookd.yaml.
func TestReadmeExamplesLoad(t *testing.T) {
	// The hook files' example lists github.search_issues: hookd.yaml
	// declares the server, as the README's does.
	e := newEnv(t, "llm: {model: test-model, base_url: http://127.0.0.1:1/v1}\nmcp_servers:\n  github: {command: [github-mcp-server, stdio]}\n", map[string]string{
		"tests.yaml":       readmeBlock(t, "## A first hook"),
		"test-triage.yaml": readmeBlock(t, "## Hook files"),
	})
	if r := e.must(0, "validate"); !strings.HasPrefix(r.stdout, "2 hook(s) valid") {
		t.Errorf("validate the README's hooks:\n%s", r)
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
