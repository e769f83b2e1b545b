package config

import (
	"path/filepath"
	"regexp"
	"time"

	"gopkg.in/yaml.v3"
)

// MCPServer is one Model Context Protocol server declared under
// mcp_servers: in hookd.yaml. Exactly one of Command (a stdio server) and
// URL (a streamable-HTTP server) is set.
type MCPServer struct {
	Name    string            // the key under mcp_servers; hooks list its tools as NAME.TOOL
	Line    int               // line of the key, for messages
	Command []string          // command (+ args): the program and its arguments, run without a shell
	Env     map[string]string // env: added to the server's environment; ${VAR} expands from hookd's
	Dir     string            // dir: working directory of a stdio server (absolute; default: the settings file's directory)
	URL     string            // url: the streamable-HTTP endpoint
	Headers map[string]string // headers: sent with every HTTP request; ${VAR} expands from hookd's environment
	// StartTimeout bounds starting the server and listing its tools
	// (start_timeout, default 30s).
	StartTimeout time.Duration
	// CallTimeout bounds one tool call (call_timeout, default 2m).
	CallTimeout time.Duration
	// Sandbox is what a stdio server's process may reach (sandbox:); a
	// stdio server without sandbox.network does not start.
	Sandbox *ProcessSandbox
}

// Defaults of an MCP server's timeouts.
const (
	DefaultMCPStartTimeout = 30 * time.Second
	DefaultMCPCallTimeout  = 2 * time.Minute
)

var (
	mcpKeys = []string{"command", "args", "env", "dir", "url", "headers", "start_timeout", "call_timeout", "sandbox"}
	// mcpName leaves room for "NAME__TOOL" within the 64 characters a
	// tool name may have.
	mcpName = regexp.MustCompile(`^[A-Za-z0-9-]{1,32}$`)
)

// mcpServers decodes mcp_servers: a mapping of server name to its settings.
func (s *state) mcpServers(n *yaml.Node, path, dir string) []MCPServer {
	if n.Kind != yaml.MappingNode {
		s.errorf(n, path, "expected a mapping of NAME: {command: ...} or NAME: {url: ...}, got %s", describe(n))
		return nil
	}
	var out []MCPServer
	for _, p := range s.pairs(n, path) {
		fp := join(path, p.key)
		if !mcpName.MatchString(p.key) {
			s.errorf(p.k, fp, "%q is not a valid server name (use up to 32 letters, digits and '-')", p.key)
			continue
		}
		v := resolve(p.v)
		if isNull(v) {
			s.errorf(p.k, fp, "needs command (a stdio server) or url (a streamable-HTTP server)")
			continue
		}
		srv := MCPServer{Name: p.key, Line: p.k.Line, Dir: dir,
			StartTimeout: DefaultMCPStartTimeout, CallTimeout: DefaultMCPCallTimeout}
		f := s.fields(v, fp, mcpKeys, nil)
		if c := f.get("command"); c != nil {
			if c.Kind == yaml.ScalarNode {
				var prog string
				if s.decodeAt(c, join(fp, "command"), &prog) {
					srv.Command = []string{prog}
				}
			} else {
				s.decodeAt(c, join(fp, "command"), &srv.Command)
			}
			if len(srv.Command) == 0 || srv.Command[0] == "" {
				s.errorf(c, join(fp, "command"), "must name a program")
			}
			var args []string
			if _, ok := f.decode("args", &args); ok {
				srv.Command = append(srv.Command, args...)
			}
		} else if f.has("args") {
			s.add(f.keyLine("args"), join(fp, "args"), "args needs command")
		}
		srv.Env = s.env(f.get("env"), join(fp, "env"), false)
		if d, ok := f.decode("dir", &srv.Dir); ok {
			switch {
			case srv.Dir == "":
				s.errorf(d, join(fp, "dir"), "must not be empty")
			case !filepath.IsAbs(srv.Dir):
				srv.Dir = filepath.Join(dir, srv.Dir)
			}
		}
		if u, ok := f.decode("url", &srv.URL); ok {
			if err := checkURL(srv.URL); err != nil {
				s.errorf(u, join(fp, "url"), "%s", err)
			}
		}
		if h := f.get("headers"); h != nil {
			s.decodeAt(h, join(fp, "headers"), &srv.Headers)
		}
		srv.Sandbox = s.processSandbox(f.get("sandbox"), join(fp, "sandbox"), srv.Dir)
		if t, ok := f.decode("start_timeout", &srv.StartTimeout); ok {
			positive(s, t, join(fp, "start_timeout"), srv.StartTimeout)
		}
		if t, ok := f.decode("call_timeout", &srv.CallTimeout); ok {
			positive(s, t, join(fp, "call_timeout"), srv.CallTimeout)
		}
		switch {
		case srv.Command == nil && srv.URL == "":
			s.errorf(p.k, fp, "needs command (a stdio server) or url (a streamable-HTTP server)")
		case srv.Command != nil && srv.URL != "":
			s.add(f.keyLine("url"), join(fp, "url"), "give command (a stdio server) or url (a streamable-HTTP server), not both")
		case srv.URL != "" && (srv.Env != nil || f.has("dir")):
			s.add(f.keyLine("url"), fp, "env and dir apply to stdio servers (command), not to url")
		case srv.URL != "" && srv.Sandbox != nil:
			s.add(f.keyLine("sandbox"), join(fp, "sandbox"), "sandbox applies to stdio servers (command), not to url")
		case srv.Command != nil && srv.Headers != nil:
			s.add(f.keyLine("headers"), join(fp, "headers"), "headers apply to url servers, not to command")
		}
		out = append(out, srv)
	}
	return out
}
