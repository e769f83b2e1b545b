package config

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/glob"
	"gopkg.in/yaml.v3"
)

// DefaultHandlerTimeout bounds one call of a command handler whose file
// sets no timeout.
const DefaultHandlerTimeout = 5 * time.Second

// Handler is a command handler declared by a file in hooks.d: a file
// with `on:` (a lifecycle point) instead of a trigger. The command gets
// the point's payload as JSON on stdin and answers by its exit code and
// stdout (see docs/hooks.md, "Lifecycle handlers").
type Handler struct {
	File  string       // path as given to the loader
	Line  int          // line of the file's first key
	On    engine.Point //
	Label string       // default: the file name without its extension; unique per point
	// LabelLine is the line of the label key (the first key's line when
	// the label is the file name).
	LabelLine int
	Enabled   bool
	HookGlob  string         // match.hook: a glob on the hook's name (a glob.Slash name of one segment); "" matches all
	Tool      *regexp.Regexp // match.tool: on tool:call:* points, a regexp on the tool's name; nil matches all
	Command   []string       // argv
	Dir       string         // the command's working directory: the project root
	Priority  int
	Timeout   time.Duration
	// FailClosed is on_error: fail_closed (the default is fail_open).
	FailClosed bool
	Plugin     string
	// EnvPassthrough names variables of hookd's environment the command
	// gets besides the allowlist (engine.ChildEnv).
	EnvPassthrough []string
	// Sandbox is what the command may reach (sandbox: {network, writes}):
	// by default its Dir is writable and it has no network, as it reads
	// payloads that carry event data and the model's tool calls.
	Sandbox ProcessSandbox
	// Hidden are hookd's own paths, hidden from the command.
	Hidden []string
}

// Matches reports whether the handler is for a call with this hook and
// tool name (tool is "" at points without a tool).
func (h *Handler) Matches(hook, tool string) bool {
	if h.HookGlob != "" {
		if ok, _ := glob.Match(h.HookGlob, hook, glob.Slash); !ok {
			return false
		}
	}
	return h.Tool == nil || h.Tool.MatchString(tool)
}

var (
	handlerKeys = []string{"on", "label", "description", "enabled", "match", "command", "priority",
		"timeout", "on_error", "plugin", "env_passthrough", "sandbox"}
	matchKeys = []string{"hook", "tool"}
)

// ParseHandler reads one handler file from r.
func ParseHandler(r io.Reader, file string, opts Options) (*Handler, error) {
	data, err := readAll(r)
	if err != nil {
		return nil, &Error{File: file, Msg: fmt.Sprintf("read: %s", err), Err: err}
	}
	s := newState(file)
	top := s.parseDoc(data, false)
	if top == nil {
		return nil, s.result()
	}
	h := s.handler(top, opts)
	if errs := s.result(); errs != nil {
		return nil, errs
	}
	return h, nil
}

// isHandlerDoc reports whether top, the top mapping of a file, has an
// `on` key: a handler file rather than a hook file.
func isHandlerDoc(top *yaml.Node) bool {
	for i := 0; i+1 < len(top.Content); i += 2 {
		if k := top.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "on" {
			return true
		}
	}
	return false
}

func (s *state) handler(top *yaml.Node, opts Options) *Handler {
	h := &Handler{File: s.file, Line: top.Line, Label: opts.DefaultName, Enabled: true,
		Priority: engine.DefaultPriority, Timeout: DefaultHandlerTimeout, Dir: opts.Root}
	if len(top.Content) > 0 {
		h.Line = top.Content[0].Line
	}
	f := s.fields(top, "", handlerKeys, nil)
	if n, ok := f.decode("on", &h.On); ok && h.On.Model() == "" {
		names := make([]string, 0, len(engine.Points()))
		for _, p := range engine.Points() {
			names = append(names, string(p))
		}
		s.errorf(n, "on", "unknown lifecycle point %q (the points: %s)", h.On, strings.Join(names, ", "))
	} else if !ok && f.get("on") == nil {
		s.add(f.keyLine("on"), "on", "required: the lifecycle point the handler is for")
	}
	var desc string
	f.decode("description", &desc)
	f.decode("enabled", &h.Enabled)
	if n, ok := f.decode("label", &h.Label); ok && strings.TrimSpace(h.Label) == "" {
		s.errorf(n, "label", "must not be empty (leave it out for the file name)")
	}
	if h.Label == "" {
		s.add(h.Line, "label", "required")
	}
	h.LabelLine = f.keyLine("label")
	if n := f.get("match"); n != nil {
		mf := s.fields(n, "match", matchKeys, nil)
		if g, ok := mf.decode("hook", &h.HookGlob); ok {
			if _, err := glob.Compile(h.HookGlob, glob.Slash); err != nil {
				s.errorf(g, "match.hook", "bad glob: %s", err)
			}
		}
		var tool string
		if t, ok := mf.decode("tool", &tool); ok {
			switch re, err := regexp.Compile(tool); {
			case err != nil:
				s.errorf(t, "match.tool", "bad regexp %q: %s", tool, err)
			case h.On != "" && !strings.HasPrefix(string(h.On), "tool:"):
				s.errorf(t, "match.tool", "only tool:call:before and tool:call:after have a tool to match (on is %s)", h.On)
			default:
				h.Tool = re
			}
		}
	}
	if n, ok := f.decode("command", &h.Command); ok {
		if len(h.Command) == 0 || h.Command[0] == "" {
			s.errorf(n, "command", "must be a non-empty list: the program and its arguments")
		}
	} else if f.get("command") == nil {
		s.add(f.keyLine("command"), "command", "required: the program and its arguments, as a list")
	}
	s.envNames(f, "env_passthrough", &h.EnvPassthrough)
	if ps := s.processSandbox(f.get("sandbox"), "sandbox", h.Dir); ps != nil {
		h.Sandbox = *ps
	}
	h.Hidden = opts.ownPaths()
	f.decode("priority", &h.Priority)
	if n, ok := f.decode("timeout", &h.Timeout); ok {
		positive(s, n, "timeout", h.Timeout)
	}
	var onError string
	if n, ok := f.decode("on_error", &onError); ok {
		switch onError {
		case "fail_open":
		case "fail_closed":
			h.FailClosed = true
			if h.On.Model() == engine.ModelVoid {
				s.errorf(n, "on_error", "fail_closed has no effect at %s: handlers of a void point observe, and their errors are only logged (leave on_error out)", h.On)
			}
		default:
			s.errorf(n, "on_error", "must be fail_open or fail_closed (got %q)", onError)
		}
	}
	if n, ok := f.decode("plugin", &h.Plugin); ok && !hookName.MatchString(h.Plugin) {
		s.errorf(n, "plugin", "%q is not a valid plugin id (use letters, digits, '_', '.', '-')", h.Plugin)
	}
	return h
}
