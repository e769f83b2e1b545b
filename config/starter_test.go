package config

import (
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestStarterLoads checks that the settings Starter writes for each
// server load and say what was chosen, whatever the model's name.
func TestStarterLoads(t *testing.T) {
	t.Parallel()
	llama, err := LlamaCppServer("http://127.0.0.1:8080", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []ModelServer{llama, OllamaServer(""), OllamaServer("qwen2.5:7b"), OllamaServer("4"), OllamaServer("yes"), OpenAIServer("a #b")} {
		dir := t.TempDir()
		if err := WriteStarter(dir, Starter(s)); err != nil {
			t.Fatal(err)
		}
		d, err := LoadDaemonFile(filepath.Join(dir, "hookd.yaml"))
		if err != nil {
			t.Errorf("%s %s: %v", s.Flag, s.Model, err)
			continue
		}
		if d.LLM.Model != s.Model || d.LLM.BaseURL != s.BaseURL || (s.KeyEnv != "" && d.LLM.APIKeyEnv != s.KeyEnv) {
			t.Errorf("%s: loaded %+v, want model %q at %q", s.Flag, d.LLM, s.Model, s.BaseURL)
		}
		hooks, errs := LoadDir(d.HooksDir, d.HookOptions())
		if len(errs) > 0 || len(hooks) != 1 || hooks[0].Name != StarterHook {
			t.Fatalf("%s: the starter hook: %d hooks, %v", s.Flag, len(hooks), errs)
		}
		if h := hooks[0]; len(h.Steps) != 1 || !h.Steps[0].Skip.IfEmpty || h.Prompt == "" {
			t.Errorf("the starter hook is no check-then-ask hook: %+v", h)
		}
	}
}

// TestYAMLString checks that a string written by yamlString reads back
// as itself.
func TestYAMLString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"llama3.1", "qwen2.5:7b", "4", "3.1", "yes", "No", "null", "~", "", " x", "a #b", "a: b", `q"uote`, "http://h:1/v1", "Qwen/Qwen2.5-7B-Instruct"} {
		var got string
		if err := yaml.Unmarshal([]byte("v: "+yamlString(s)), &struct{ V *string }{&got}); err != nil {
			t.Errorf("%q written %s: %v", s, yamlString(s), err)
		} else if got != s {
			t.Errorf("%q written %s reads back %q", s, yamlString(s), got)
		}
	}
}

// TestLlamaCppServerURL checks the addresses --llama-cpp takes.
func TestLlamaCppServerURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":    "http://127.0.0.1:8080/v1",
		"http://127.0.0.1:8080/":   "http://127.0.0.1:8080/v1",
		"https://llm.lan/v1":       "https://llm.lan/v1",
		"http://gpu:9000/proxy/v1": "http://gpu:9000/proxy/v1",
		"127.0.0.1:8080":           "",
		"ftp://h/v1":               "",
		"http://h:1/v1?x=1":        "",
		"http:///v1":               "",
	} {
		s, err := LlamaCppServer(in, "")
		if want == "" {
			if err == nil {
				t.Errorf("%q: took it as %s", in, s.BaseURL)
			}
			continue
		}
		if err != nil || s.BaseURL != want {
			t.Errorf("%q: %q, %v; want %q", in, s.BaseURL, err, want)
		}
	}
}
