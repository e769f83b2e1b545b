package main

import (
	"os"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestSettingsReload: a running daemon takes hookd.yaml's llm: again when
// the file changes (the next run talks to the new server), says which
// settings need a restart, and keeps the settings in use when the new file
// is invalid or names a credential variable it did not start with.
func TestSettingsReload(t *testing.T) {
	a := llmtest.New(llmtest.Reply{Content: "from A"})
	defer a.Close()
	b := llmtest.New(llmtest.Reply{Content: "from B"}, llmtest.Reply{Content: "from B again"})
	defer b.Close()
	e := newEnv(t, "llm: {model: m, base_url: "+a.BaseURL()+"}\n", map[string]string{"ask.yaml": "prompt: hi\n"})
	d := e.serve()
	answer := func() string {
		t.Helper()
		run := e.getRun(runID(t, e.must(0, "fire", "ask", "--wait")))
		if run.Status != engine.StatusCompleted {
			t.Fatalf("run %s: %s\n%s", run.Status, run.Error, d.log)
		}
		return run.Response
	}
	if got := answer(); got != "from A" {
		t.Fatalf("first answer %q", got)
	}
	// Each new hookd.yaml is written whole and renamed into place, so the
	// daemon never reads half a file however slow the machine is.
	settings := func(body string) {
		t.Helper()
		e.write("hookd.yaml.new", body)
		if err := os.Rename(e.path("hookd.yaml.new"), e.path("hookd.yaml")); err != nil {
			t.Fatal(err)
		}
	}

	settings("llm: {model: m, base_url: " + b.BaseURL() + "}\nqueue_size: 5\n")
	d.waitLog("hookd.yaml reloaded")
	if got := answer(); got != "from B" {
		t.Errorf("after the reload: %q", got)
	}
	log := d.log.String()
	if !strings.Contains(log, "changed=[llm]") || !strings.Contains(log, "settings that take effect at the next start changed") ||
		!strings.Contains(log, "settings=[queue_size]") {
		t.Errorf("reload log:\n%s", log)
	}

	settings("llm: {model: m, base_url: " + a.BaseURL() + ", temprature: 1}\n")
	d.waitLog("hookd.yaml not reloaded; keeping the settings in use")
	settings("llm: {model: m, base_url: " + a.BaseURL() + ", api_key_env: SOME_NEW_KEY}\nqueue_size: 5\n")
	d.waitLog("names credential variables hookd did not start with")
	if got := answer(); got != "from B again" {
		t.Errorf("after refused reloads: %q", got)
	}
	if n := a.Served(); n != 1 {
		t.Errorf("server A served %d requests after it was replaced", n-1)
	}
	if !strings.Contains(d.log.String(), "temprature") || !strings.Contains(d.log.String(), "SOME_NEW_KEY") {
		t.Errorf("refusals do not say why:\n%s", d.log)
	}
}

// TestHookToolsOfAServerDeclaredLive: mcp_servers: is taken live, so a
// hook written after hookd.yaml declares a server loads with that
// server's tools; one naming a server hookd.yaml does not declare is
// refused with its file and line, and the hooks in place keep running.
func TestHookToolsOfAServerDeclaredLive(t *testing.T) {
	e := newEnv(t, "llm: {model: m}\n", map[string]string{"ask.yaml": "prompt: hi\n"})
	d := e.serve()
	e.write("hookd.yaml.new", "llm: {model: m}\nmcp_servers:\n  t: {command: [some-mcp-server]}\n")
	if err := os.Rename(e.path("hookd.yaml.new"), e.path("hookd.yaml")); err != nil {
		t.Fatal(err)
	}
	d.waitLog("hookd.yaml reloaded")
	e.write("hooks.d/uses-t.yaml", "prompt: hi\ntools: [t.echo]\n")
	e.write("hooks.d/uses-u.yaml", "prompt: hi\ntools: [u.echo]\n")
	e.waitList("uses-t loaded", func(hs map[string]engine.HookStatus) bool { _, ok := hs["uses-t"]; return ok })
	d.waitLog(`uses-u.yaml:2: tools[0]: \"u.echo\" names a tool of MCP server \"u\", which hookd.yaml does not declare`)
	if _, ok := e.listJSON()["ask"]; !ok {
		t.Errorf("ask is gone:\n%s", d.log)
	}
}
