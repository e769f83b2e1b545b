package config

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/engine"
)

// envOf reads a fixed environment.
func envOf(vars ...string) func(string) (string, bool) {
	m := map[string]string{}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestModelCheckedAgainstEnvironment: checked against an environment
// (hookd validate), a hook with a model stage for which no model is
// named anywhere — its llm.model, hookd.yaml's, HOOKD_MODEL — is an
// error at its prompt, saying which environment was checked. Without an
// environment it loads as before, and so do hooks that name a model
// somewhere or need none.
func TestModelCheckedAgainstEnvironment(t *testing.T) {
	t.Parallel()
	const from = "the shell's environment (no daemon answered)"
	for _, tc := range []struct {
		name string
		src  string
		llm  engine.LLMConfig // hookd.yaml's
		env  func(string) (string, bool)
		want string // the error, "" none
	}{
		{"nowhere", "skip_llm: false\nprompt: look\n", engine.LLMConfig{}, envOf(),
			"x.yaml:2: prompt: the hook has a prompt, so its runs call a model, but none is named: not its llm.model, not hookd.yaml's llm.model, " +
				"and HOOKD_MODEL is not set in " + from + "; name one, or set skip_llm: true to run its steps only"},
		{"alias", "prompt_template: look\nllm: {max_rounds: 2}\n", engine.LLMConfig{}, envOf(), "x.yaml:1: prompt_template: the hook has a prompt"},
		{"environment", "prompt: look\n", engine.LLMConfig{}, envOf("HOOKD_MODEL=gpt-4o-mini"), ""},
		{"hookd.yaml", "prompt: look\n", engine.LLMConfig{Model: "gpt-4o-mini"}, envOf(), ""},
		{"hook", "prompt: look\nllm: {model: gpt-4o-mini}\n", engine.LLMConfig{}, envOf(), ""},
		{"skip_llm", "prompt: look\nskip_llm: true\n", engine.LLMConfig{}, envOf(), ""},
		{"no prompt", "steps: [{type: shell, command: date}]\n", engine.LLMConfig{}, envOf(), ""},
		{"no environment given", "prompt: look\n", engine.LLMConfig{}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHook(strings.NewReader(tc.src), "x.yaml", Options{DefaultName: "x", LLM: tc.llm, Env: tc.env, EnvFrom: from})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("error %v\nwant %s...", err, tc.want)
			}
		})
	}
}

// TestAPIKeyEnvWarning: checked against an environment, a hook whose
// model's key variable the environment lacks is warned about, at the
// api_key_env that names it (the hook's, or else at its prompt, saying
// hookd.yaml's), naming the environment checked. The default
// OPENAI_API_KEY counts only for OpenAI's own server: a local server
// (base_url) needs no key.
func TestAPIKeyEnvWarning(t *testing.T) {
	t.Parallel()
	const from = "the running daemon's environment"
	for _, tc := range []struct {
		name string
		src  string
		llm  engine.LLMConfig // hookd.yaml's
		env  func(string) (string, bool)
		want string // the warning, "" none
	}{
		{"hook's", "prompt: look\nllm:\n  model: m\n  api_key_env: OPENROUTER_API_KEY\n", engine.LLMConfig{APIKeyEnv: DefaultAPIKeyEnv}, envOf("OPENAI_API_KEY=k"),
			"x.yaml:4: llm.api_key_env: OPENROUTER_API_KEY is not set in " + from + ": the model's calls will have no key"},
		{"hook's set", "prompt: look\nllm: {model: m, api_key_env: OPENROUTER_API_KEY}\n", engine.LLMConfig{APIKeyEnv: DefaultAPIKeyEnv}, envOf("OPENROUTER_API_KEY=k"), ""},
		{"hookd.yaml's", "prompt: look\n", engine.LLMConfig{Model: "m", APIKeyEnv: "CORP_LLM_KEY"}, envOf("OPENAI_API_KEY=k"),
			"x.yaml:1: prompt: CORP_LLM_KEY (hookd.yaml's llm.api_key_env) is not set in " + from + ": the model's calls will have no key"},
		{"default for OpenAI", "prompt: look\n", engine.LLMConfig{Model: "m", APIKeyEnv: DefaultAPIKeyEnv}, envOf(),
			"x.yaml:1: prompt: OPENAI_API_KEY (the default api_key_env) is not set in " + from + ": the model's calls will have no key"},
		{"default for a local server", "prompt: look\n", engine.LLMConfig{Model: "m", APIKeyEnv: DefaultAPIKeyEnv, BaseURL: "http://127.0.0.1:11434/v1"}, envOf(), ""},
		{"local server from the environment", "prompt: look\n", engine.LLMConfig{Model: "m", APIKeyEnv: DefaultAPIKeyEnv}, envOf("OPENAI_BASE_URL=http://127.0.0.1:11434/v1"), ""},
		{"no model stage", "prompt: look\nskip_llm: true\nllm: {api_key_env: NOPE}\n", engine.LLMConfig{}, envOf(), ""},
		{"no environment given", "prompt: look\nllm: {model: m, api_key_env: NOPE}\n", engine.LLMConfig{}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warned []string
			opts := Options{DefaultName: "x", LLM: tc.llm, Env: tc.env, EnvFrom: from,
				Warn: func(e *Error) { warned = append(warned, e.Error()) }}
			if _, err := ParseHook(strings.NewReader(tc.src), "x.yaml", opts); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && len(warned) > 0:
				t.Fatalf("warned %q", warned)
			case tc.want != "" && (len(warned) != 1 || !strings.HasPrefix(warned[0], tc.want)):
				t.Fatalf("warned %q\nwant %s...", warned, tc.want)
			}
		})
	}
}

// TestCheckOptions: hookd.yaml's llm settings and the environment given
// reach the check of a hooks directory (what hookd validate runs), and a
// hooks directory loaded for the daemon (HookOptions) is not checked
// against an environment.
func TestCheckOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	settings := filepath.Join(dir, "hookd.yaml")
	if err := os.WriteFile(settings, []byte("llm: {api_key_env: CORP_LLM_KEY}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(dir, "hooks.d")
	if err := os.Mkdir(hooks, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hooks, "triage.yaml"), []byte("skip_llm: false\nprompt: look\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := LoadDaemonFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	if names, _, errs := CheckDir(d.HooksDir, d.HookOptions()); len(errs) != 0 || len(names) != 1 {
		t.Fatalf("loaded without an environment: %v %v", names, errs)
	}

	var mu sync.Mutex
	var warned []string
	opts := d.CheckOptions(envOf("HOOKD_MODEL=gpt-4o-mini"), "the shell's environment")
	opts.Warn = func(e *Error) { mu.Lock(); warned = append(warned, e.Error()); mu.Unlock() }
	if _, _, errs := CheckDir(d.HooksDir, opts); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "triage.yaml:2: prompt: CORP_LLM_KEY (hookd.yaml's llm.api_key_env) is not set in the shell's environment") {
		t.Errorf("warned %q", warned)
	}

	_, _, errs := CheckDir(d.HooksDir, d.CheckOptions(envOf(), "the shell's environment"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "triage.yaml:2: prompt: the hook has a prompt, so its runs call a model, but none is named") {
		t.Errorf("errors %v", errs)
	}
}
