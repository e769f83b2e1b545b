package daemon

import (
	"github.com/hookd/hookd/api/server"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/mcp"
)

// CredentialEnv names the environment variables that hold hookd's own
// credentials: the API token's (token_env), the model key's
// (llm.api_key_env), the notify targets' url_env, and those the MCP
// servers' env and headers read (${VAR}). The engine redacts their values
// from every run (engine.Config.Credentials); no child process inherits
// them unless a hook or a server names one.
func CredentialEnv(d *config.Daemon) []string {
	names := []string{d.TokenEnv, d.LLM.APIKeyEnv}
	if d.TokenEnv == "" {
		names[0] = config.DefaultTokenEnv
	}
	for _, t := range d.Notify {
		names = append(names, t.URLEnv)
	}
	for _, s := range d.MCPServers {
		for _, m := range [...]map[string]string{s.Env, s.Headers} {
			for _, v := range m {
				names = append(names, mcp.EnvRefs(v)...)
			}
		}
	}
	out := names[:0]
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// CredentialValues holds hookd's credentials that are not in its
// environment, for engine.Config.CredentialValues: the API token read
// from token_file (a token in token_env is among credentialEnv's names).
// A token_file that cannot be read gives none here; serve reports it.
func CredentialValues(d *config.Daemon) map[string]string {
	if d.TokenFile == "" {
		return nil
	}
	tok, err := server.Token(d, func(string) string { return "" })
	if err != nil || tok == "" {
		return nil
	}
	return map[string]string{"token_file": tok}
}
