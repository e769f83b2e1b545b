package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// ModelServer is the model server a new project asks (hookd init): what
// its hookd.yaml's llm: says.
type ModelServer struct {
	Flag    string // the init flag that chose it: --llama-cpp, --ollama or --openai
	Name    string // what it is, for people: "a llama.cpp server", "Ollama", "OpenAI's API"
	Model   string // llm.model
	BaseURL string // llm.base_url
	KeyEnv  string // llm.api_key_env: the variable holding the key; "" for a server that takes none
	// Setup is what to do before the first run, one command or sentence
	// per line ("" for nothing).
	Setup string
}

// The model names a new project starts with when none is given.
const (
	DefaultOllamaModel = "llama3.1"
	DefaultOpenAIModel = "gpt-4o-mini"
	// A llama.cpp server answers with the model it was started with,
	// whatever the request names.
	DefaultLlamaCppModel = "local"
)

// LlamaCppServer is a llama.cpp server (llama-server) at base: its
// address (http://127.0.0.1:8080), to which /v1 is added when it has no
// path, or its OpenAI endpoint (http://127.0.0.1:8080/v1).
func LlamaCppServer(base, model string) (ModelServer, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return ModelServer{}, fmt.Errorf("--llama-cpp %q: want the server's http(s) address, like http://127.0.0.1:8080", base)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1"
	}
	if model == "" {
		model = DefaultLlamaCppModel
	}
	return ModelServer{Flag: "--llama-cpp", Name: "a llama.cpp server", Model: model, BaseURL: u.String(),
		Setup: "llama-server -m MODEL.gguf --jinja --port " + portOf(u) + "   # if it is not running yet"}, nil
}

// portOf is u's port as llama-server takes it.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// OllamaServer is Ollama on this machine, at its default port.
func OllamaServer(model string) ModelServer {
	if model == "" {
		model = DefaultOllamaModel
	}
	return ModelServer{Flag: "--ollama", Name: "Ollama", Model: model, BaseURL: "http://127.0.0.1:11434/v1",
		Setup: "ollama pull " + model + "   # once; ollama serve must be running"}
}

// OpenAIServer is OpenAI's API, with the key in OPENAI_API_KEY.
func OpenAIServer(model string) ModelServer {
	if model == "" {
		model = DefaultOpenAIModel
	}
	return ModelServer{Flag: "--openai", Name: "OpenAI's API", Model: model, BaseURL: "https://api.openai.com/v1", KeyEnv: DefaultAPIKeyEnv,
		Setup: "export " + DefaultAPIKeyEnv + "=...   # your key, in the shell that runs hookd (hookd.yaml names the variable, never the key)"}
}

// StarterHook is the name of the hook a new project starts with.
const StarterHook = "todos"

// StarterFile is one file of a new project.
type StarterFile struct {
	Path string // relative to the project's directory, slash-separated
	Text string
}

// Starter returns the files of a new project that asks s: hookd.yaml,
// then the hook hooks.d/todos.yaml, a check (grep finds the project's
// TODO and FIXME notes) and a question to the model only when the check
// found one.
func Starter(s ModelServer) []StarterFile {
	var llm strings.Builder
	fmt.Fprintf(&llm, "llm:                          # the model every hook asks, unless its own llm: says otherwise\n")
	fmt.Fprintf(&llm, "  model: %s\n", yamlString(s.Model))
	fmt.Fprintf(&llm, "  base_url: %s\n", yamlString(s.BaseURL))
	if s.KeyEnv != "" {
		fmt.Fprintf(&llm, "  api_key_env: %s   # the variable holding the key; never the key itself\n", s.KeyEnv)
	}
	settings := "# hookd's settings, written by hookd init " + s.Flag + " (the model: " + s.Name + ").\n" +
		"# Every key is optional: hookd's docs/daemon.md, \"Daemon settings: hookd.yaml\", lists them.\n" +
		llm.String()
	hook := `# A check, then a question to the model only when the check found something.
# Try it now: hookd fire todos --wait (see the prompt without a model: hookd render todos)
description: The project's TODO and FIXME notes, and which to do first
trigger:
  cron: "0 9 * * 1-5"               # weekdays at 9:00, this machine's time
steps:
  - name: notes
    type: shell
    # file:line:text of each note, at most 40 (hookd's own files are not visible to a hook)
    command: grep -rnIw -e TODO -e FIXME --exclude-dir=.git --exclude-dir=.hookd --exclude-dir=hooks.d --exclude-dir=node_modules . | head -n 40
    skip_llm_if_empty: true         # the check: no note, no model call (completed, model not needed)
prompt: |
  These TODO and FIXME notes are in my project, as file:line:text:
  {{steps.notes.stdout}}
  Pick the three worth doing first and say why, in one short line each.
`
	return []StarterFile{{"hookd.yaml", settings}, {"hooks.d/" + StarterHook + ".yaml", hook}}
}

// yamlString writes s as a YAML scalar: plain when that reads back as
// the same string, else double-quoted.
func yamlString(s string) string {
	plain := s != "" && !strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`\\\n\t") && strings.TrimSpace(s) == s
	if plain {
		switch strings.ToLower(s) {
		case "true", "false", "yes", "no", "on", "off", "null", "~":
			plain = false
		}
		if strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
			plain = false // a number; model: 4 would read as "4" too, but quoting says so
		}
	}
	if s == "" || !plain {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// WriteStarter writes files into dir (made if missing). It overwrites
// nothing: when any of the files is there already it writes none and
// returns an *fs.PathError with the first one's path and fs.ErrExist; a
// file that appears while it writes is not replaced either.
func WriteStarter(dir string, files []StarterFile) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if _, err := os.Lstat(p); err == nil {
			return &fs.PathError{Op: "write", Path: p, Err: fs.ErrExist}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("check %s: %w", p, err)
		}
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		// 0755 and 0644 at most (the umask may take more): hookd refuses
		// hook files and a hooks directory others may write.
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("make %s: %w", filepath.Dir(p), err)
		}
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		_, err = w.WriteString(f.Text)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}
