package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// AgentQueueCooldown is the cooldown of a hook whose trigger is written in
// agent-queue's shape ({type: periodic, ...}, {type: event, ...},
// interval_seconds) and that sets none: agent-queue's default for every
// hook, so the file keeps its meaning. A hook written with every:, cron:,
// event: or watch: has no default cooldown, nor has a one-shot.
const AgentQueueCooldown = time.Hour

// isAgentQueueTrigger reports whether the trigger mapping n is written
// in agent-queue's shape: with type or interval_seconds.
func isAgentQueueTrigger(n *yaml.Node) bool {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := resolve(n.Content[i]); k != nil && (k.Value == "type" || k.Value == "interval_seconds") {
			return true
		}
	}
	return false
}

// providers maps agent-queue's llm_config.provider to the base URL of
// the provider's OpenAI-compatible endpoint, used when base_url is empty.
var providers = map[string]string{
	"openai":     "https://api.openai.com/v1",
	"ollama":     "http://127.0.0.1:11434/v1",
	"openrouter": "https://openrouter.ai/api/v1",
	"groq":       "https://api.groq.com/openai/v1",
	"lmstudio":   "http://127.0.0.1:1234/v1",
}

// providerURL returns the base URL of provider.
func providerURL(provider string) (string, error) {
	if u, ok := providers[strings.ToLower(provider)]; ok {
		return u, nil
	}
	names := make([]string, 0, len(providers))
	for n := range providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return "", fmt.Errorf("unknown provider %q: hookd speaks the OpenAI chat-completions protocol; "+
		"use one of %s, or set base_url to an OpenAI-compatible endpoint", provider, strings.Join(names, ", "))
}
