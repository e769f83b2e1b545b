package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/hookd/hookd/engine"
)

// modelEnv checks h's model settings against the environment opts.Env
// reads (hookd validate; nothing without it): for a hook with a model
// stage, no model named anywhere is an error at its prompt, and a key
// variable the environment lacks a warning (opts.Warn), at the
// api_key_env that names it. The settings resolve as the run's do
// (engine.LLMConfig.Resolve). prompt is the prompt's field path (it may
// be the alias prompt_template).
func (s *state) modelEnv(f *fields, prompt string, h *engine.Hook, opts Options) {
	if opts.Env == nil || !h.NeedsModel() {
		return
	}
	from := opts.EnvFrom
	if from == "" {
		from = "the environment checked"
	}
	r := h.LLM.Resolve(opts.LLM, opts.Env)
	promptLine := f.keyLine(prompt)
	// An environment that tells names only (Options.Env) names a model
	// by having HOOKD_MODEL, and a server whose address it does not tell.
	_, modelSet := opts.Env(engine.EnvModel)
	_, baseSet := opts.Env(engine.EnvBaseURL)
	if r.Model == "" && !modelSet {
		s.add(promptLine, prompt, fmt.Sprintf("the hook has a prompt, so its runs call a model, but none is named: not its llm.model, "+
			"not hookd.yaml's llm.model, and %s is not set in %s; name one, or set skip_llm: true to run its steps only", engine.EnvModel, from))
		return
	}
	if opts.Warn == nil || s.count() > 0 {
		return
	}
	if _, ok := opts.Env(r.APIKeyEnv); ok {
		return
	}
	line, field, what := promptLine, prompt, ""
	switch {
	case h.LLM.APIKeyEnv != "":
		line, field = s.llmKeyLine(f)
	case r.APIKeyEnv != engine.DefaultAPIKeyEnv:
		what = " (hookd.yaml's llm.api_key_env)"
	case localServer(r.BaseURL):
		return // a server on this machine or network needs no key, unless one is named
	case r.BaseURL == "" && baseSet:
		return // a server whose address the environment does not tell: whether it needs a key cannot be told
	default:
		what = " (the default api_key_env)"
	}
	opts.Warn(&Error{File: s.file, Line: line, Field: field, Msg: fmt.Sprintf(
		"%s%s is not set in %s: the model's calls will have no key; set it where hookd runs, or name the variable that holds the key",
		r.APIKeyEnv, what, from)})
}

// llmKeyLine is the line and field path of the hook's llm.api_key_env
// (llm_config.api_key_env under agent-queue's name).
func (s *state) llmKeyLine(f *fields) (int, string) {
	n, path := f.either("llm", "llm_config")
	path = join(path, "api_key_env")
	if n = resolve(n); n == nil {
		return f.node.Line, path
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "api_key_env" {
			return n.Content[i].Line, path
		}
	}
	return n.Line, path
}

// localServer reports whether base (a resolved llm base_url) is a server
// on this machine or a private network: such servers (Ollama, vLLM) mostly
// take no key.
func localServer(base string) bool {
	if base == "" {
		return false // OpenAI's
	}
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate())
}
