package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/sandbox"
	"gopkg.in/yaml.v3"
)

// Options says how to load hook files.
type Options struct {
	// Root is the directory a relative workdir (and so a relative watch
	// path) resolves against; it is also the default workdir. Empty means
	// the process's working directory; LoadDir defaults it to the parent
	// of the hooks directory.
	Root string
	// DefaultName is the hook's name when the file gives none. LoadDir
	// sets it to the file name without its extension.
	DefaultName string
	// AllowInsecure makes LoadDir load a hooks directory and hook files
	// that another user could have written (hookd.yaml's
	// allow_insecure_hooks); by default they are refused.
	AllowInsecure bool
	// Warn, when set, is called (from any goroutine) with each warning
	// about a hook that loads: something that will not work as written
	// on this machine (Sandbox), or likely not as meant.
	Warn func(*Error)
	// Sandbox, when set, is which containment hookd's processes get here,
	// for Warn: a hook refused where containment is missing, limits that
	// cannot be enforced.
	Sandbox *sandbox.Status
	// Unconfined are the MCP stdio servers of hookd.yaml that declare no
	// sandbox network, and so do not start: a hook listing their tools
	// is warned about.
	Unconfined map[string]bool
	// Protected are hookd's own paths (the settings file, the token file,
	// the state directory, the database's files; Daemon.OwnPaths): a
	// writes: may neither hold one nor lie inside one. LoadDir adds the
	// hooks directory.
	Protected []string
	// MCPServers, when not nil, are the names of hookd.yaml's
	// mcp_servers: a tools: entry SERVER.TOOL must name one of them
	// (their tools are listed only when a run starts the server). Nil
	// leaves the server unchecked, for a hook read without hookd.yaml.
	// Daemon.HookOptions sets it.
	MCPServers []string
	// LLM are hookd.yaml's llm settings, the defaults of every hook's
	// (Daemon.HookOptions sets them); read with Env.
	LLM engine.LLMConfig
	// Env, when set, reads the environment the hooks are checked against
	// (hookd validate: the running daemon's, or the shell's; EnvFrom says
	// which): a hook with a model stage for which neither its llm.model,
	// LLM's nor the environment's HOOKD_MODEL names a model is an error,
	// and a key variable (api_key_env) the environment lacks a warning
	// (Warn). Nil checks nothing against an environment, so a hook file
	// loads the same wherever it is read: the daemon loads without it.
	// Env reports whether a variable is set to something, and its value
	// where the environment tells it: "" from one that tells names only
	// (the running daemon's, GET /v1/env).
	Env func(string) (string, bool)
	// EnvFrom names the environment Env reads, for the messages ("the
	// shell's environment"); "" is "the environment checked".
	EnvFrom string

	// broad remembers broadDir's answers during one LoadDir: its hooks
	// mostly share a workdir (the project root). Nil: not remembered.
	broad *sync.Map // dir -> string
	// cleanDir is LoadDir's directory, cleaned (filepath.Clean).
	cleanDir string
}

// Canonical hook keys, and the agent-queue names accepted for them.
var (
	hookKeys = []string{"name", "description", "enabled", "trigger", "cooldown", "overlap", "on_interrupted",
		"timeout", "workdir", "env", "env_passthrough", "secrets", "steps", "system", "prompt", "llm", "budget",
		"tools", "accept_from_tools", "allow_broad_workdir", "plugins", "skip_llm", "check", "notify", "retention", "write_roots", "id", "project_id", "retry", "rate",
		"writes", "reads", "network", "limits"}
	hookAliases = map[string]string{
		"context_steps":      "steps",
		"prompt_template":    "prompt",
		"cooldown_seconds":   "cooldown",
		"llm_config":         "llm",
		"max_tokens_per_run": "budget.max_tokens_per_run",
	}
	llmKeys = []string{"model", "provider", "base_url", "api_key_env", "max_rounds", "tool_choice", "tool_choice_rounds", "parallel_tool_calls", "on_truncated"}
)

// ParseHook reads one hook file from r. file names it in errors and in
// the hook's Source. The error, if any, is an Errors list of every problem
// found, each naming file, line and field.
func ParseHook(r io.Reader, file string, opts Options) (*engine.Hook, error) {
	data, err := readAll(r)
	if err != nil {
		return nil, &Error{File: file, Msg: fmt.Sprintf("read: %s", err), Err: err}
	}
	h, _, errs := parseHook(data, file, opts)
	if errs != nil {
		return nil, errs
	}
	return h, nil
}

// parseHook parses a hook file and also returns the line that gives its
// name, for duplicate-name errors.
func parseHook(data []byte, file string, opts Options) (*engine.Hook, int, Errors) {
	s := newState(file)
	top := s.parseDoc(data, false)
	if top == nil {
		return nil, 0, s.result()
	}
	return s.hook(top, data, opts)
}

// hook decodes the top mapping of a hook file parsed from data.
func (s *state) hook(top *yaml.Node, data []byte, opts Options) (*engine.Hook, int, Errors) {
	sum := sha256.Sum256(data)
	h := &engine.Hook{
		Enabled: true,
		Overlap: engine.OverlapSkip,
		Source:  engine.Source{File: s.file, Line: top.Line, Version: hex.EncodeToString(sum[:6])}, // 12 hex digits
	}
	if len(top.Content) > 0 {
		h.Source.Line = top.Content[0].Line
	}
	f := s.fields(top, "", hookKeys, hookAliases)

	nameLine := h.Source.Line
	// agent-queue's id is the name when the file has no name.
	nameKey := "name"
	if !f.has("name") && f.has("id") {
		nameKey = "id"
	} else if f.has("id") {
		var id string
		f.decode("id", &id) // checked as text, otherwise unused
	}
	if n := f.get(nameKey); n != nil {
		nameLine = n.Line
		if s.decodeAt(n, nameKey, &h.Name) && !hookName.MatchString(h.Name) {
			s.errorf(n, nameKey, "%q is not a valid hook name (use letters, digits, '_', '.', '-')", h.Name)
		}
	} else {
		h.Name = opts.DefaultName
		switch {
		case h.Name == "":
			s.add(nameLine, "name", "required")
		case !hookName.MatchString(h.Name):
			s.add(nameLine, "name", fmt.Sprintf("the file name gives %q, which is not a valid hook name; set name (letters, digits, '_', '.', '-')", h.Name))
		}
	}
	f.decode("description", &h.Description)
	f.decode("enabled", &h.Enabled)
	f.decode("system", &h.System)
	f.decode("skip_llm", &h.SkipLLM)
	if p := f.get("project_id"); p != nil {
		h.Project, _ = s.text(p, "project_id")
	}

	if n, path := f.either("cooldown", "cooldown_seconds"); n != nil && s.decodeAt(n, path, &h.Cooldown) {
		nonNegative(s, n, path, h.Cooldown)
	}
	if n, ok := f.decode("overlap", &h.Overlap); ok {
		switch h.Overlap {
		case engine.OverlapSkip, engine.OverlapQueue, engine.OverlapCancelPrevious:
		default:
			s.errorf(n, "overlap", "must be skip, queue or cancel_previous (got %q)", h.Overlap)
		}
	}
	if n, ok := f.decode("on_interrupted", &h.OnInterrupted); ok {
		switch h.OnInterrupted {
		case engine.InterruptedLeave, engine.InterruptedRerun:
		default:
			s.errorf(n, "on_interrupted", "must be leave or rerun (got %q)", h.OnInterrupted)
		}
	}
	if n, ok := f.decode("timeout", &h.Timeout); ok {
		positive(s, n, "timeout", h.Timeout)
	}

	h.Workdir = s.workdir(f, opts.Root, opts.broad)
	s.sandboxFields(f, h, opts)
	h.Env = s.env(f.get("env"), "env", true)
	s.envNames(f, "secrets", &h.Secrets)
	s.envNames(f, "env_passthrough", &h.EnvPassthrough)
	s.tools(f.get("tools"), h, opts.MCPServers)
	h.AcceptFromTools = !holdsPowerfulTools(h.Tools)
	f.decode("accept_from_tools", &h.AcceptFromTools)
	s.writeRoots(f, h)
	if s.names(f, "plugins", &h.Plugins) {
		h.PluginsSet = true
		if h.Plugins == nil {
			h.Plugins = []string{}
		}
	}

	if n := f.get("trigger"); n != nil {
		interval := s.trigger(n, "trigger", h)
		if h.Trigger.Kind != engine.TriggerManual && h.Trigger.Kind != engine.TriggerAt && isAgentQueueTrigger(n) &&
			!f.has("cooldown") && !f.has("cooldown_seconds") {
			h.Cooldown = AgentQueueCooldown
		}
		// agent-queue's interval_seconds with a schedule: a slot of the
		// schedule fires once the interval has passed since the last run
		// as well as the cooldown, which is the cooldown gate with the
		// longer of the two.
		h.Cooldown = max(h.Cooldown, interval)
	}
	if n, path := f.either("steps", "context_steps"); n != nil {
		s.steps(n, path, h, opts)
	}
	if n := f.get("check"); n != nil {
		s.check(n, "check", h)
	}
	s.unnamedSecrets(f.get("secrets"), h)
	promptPath := "prompt"
	if n, path := f.either("prompt", "prompt_template"); n != nil && s.decodeAt(n, path, &h.Prompt) {
		s.placeholders(n, path, h.Prompt, h.Steps, len(h.Steps))
		promptPath = path
	}
	if n, path := f.either("llm", "llm_config"); n != nil {
		s.llm(n, path, &h.LLM)
		s.toolChoice(n, path, h)
	}
	s.modelEnv(f, promptPath, h, opts)
	s.tokenBudget(f, &h.Budget)
	if n := f.get("notify"); n != nil {
		h.Notify, h.NotifySet = s.notify(n, "notify", append([]*engine.StepDef{}, h.Steps...)), true
	}
	if n := f.get("retention"); n != nil {
		s.hookRetention(n, "retention", &h.Retention)
	}
	if n := f.get("retry"); n != nil {
		s.retry(n, "retry", &h.Retry)
	}
	if n := f.get("rate"); n != nil {
		s.rate(n, "rate", &h.Rate)
	}
	if opts.Warn != nil && s.count() == 0 {
		s.sandboxWarnings(f, h, opts)
	}
	return h, nameLine, s.result()
}

// workdir resolves the hook's workdir against root.
func (s *state) workdir(f *fields, root string, broad *sync.Map) string {
	if root == "" {
		root = "."
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	var dir string
	if n, ok := f.decode("workdir", &dir); ok && dir == "" {
		s.errorf(n, "workdir", "must not be empty (leave it out for the default)")
	}
	wd := filepath.Join(root, dir)
	if filepath.IsAbs(dir) {
		wd = filepath.Clean(dir)
	}
	var allow bool
	f.decode("allow_broad_workdir", &allow)
	if what := broadDirIn(broad, wd); what != "" && !allow {
		s.add(f.keyLine("workdir"), "workdir", fmt.Sprintf("%s is %s: the hook's steps and file tools would reach "+
			"everything under it; use a project directory, or set allow_broad_workdir: true to mean it", wd, what))
	}
	return wd
}

// broadDirIn is broadDir, remembered in memo when it is not nil.
func broadDirIn(memo *sync.Map, dir string) string {
	if memo == nil {
		return broadDir(dir)
	}
	if what, ok := memo.Load(dir); ok {
		return what.(string)
	}
	what := broadDir(dir)
	memo.Store(dir, what)
	return what
}

// broadDir says what dir is when it is the file system root or the home
// directory of hookd's user (compared by file identity, so a link to it
// counts), and "" otherwise.
func broadDir(dir string) string {
	fi, err := os.Stat(dir)
	same := func(other string) bool {
		if filepath.Clean(other) == dir {
			return true
		}
		ofi, oerr := os.Stat(other)
		return err == nil && oerr == nil && os.SameFile(fi, ofi)
	}
	if same("/") {
		return "the file system root"
	}
	if home, herr := os.UserHomeDir(); herr == nil && home != "" && same(home) {
		return "your home directory"
	}
	return ""
}

// writeRoots decodes write_roots: the directories, relative to the
// workdir, where the write_file tool may write ("." is the whole
// workdir). A hook whose tools grant write_file must say where, if only
// write_roots: [] for nowhere.
func (s *state) writeRoots(f *fields, h *engine.Hook) {
	n, given := f.decode("write_roots", &h.WriteRoots)
	if !given {
		if f.get("write_roots") != nil {
			return // a decode error was reported
		}
		tools := f.get("tools")
		for i, t := range h.Tools {
			if engine.GrantsTool(t, "write_file") && tools != nil && i < len(tools.Content) {
				s.errorf(tools.Content[i], index("tools", i), "%q grants write_file, which needs write_roots: the directories, "+
					"relative to the workdir, where the model may write (e.g. write_roots: [out]; [] for nowhere)", t)
			}
		}
		return
	}
	if h.WriteRoots == nil {
		h.WriteRoots = []string{}
	}
	for i, r := range h.WriteRoots {
		at := index("write_roots", i)
		switch {
		case r == "":
			s.errorf(n.Content[i], at, "must not be empty (use . for the whole workdir)")
		case filepath.IsAbs(r):
			s.errorf(n.Content[i], at, "must be relative to the hook's workdir (got %q)", r)
		case !filepath.IsLocal(filepath.Clean(r)):
			s.errorf(n.Content[i], at, "%q leaves the hook's workdir", r)
		default:
			h.WriteRoots[i] = filepath.Clean(r)
		}
	}
}

// env decodes a map of environment variables. Values may be any scalar,
// taken as written (PORT: 8080 is "8080"); null is "". A hook's (hook
// set) may not refer to ${NAME}, which would be passed as written.
func (s *state) env(n *yaml.Node, path string, hook bool) map[string]string {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		s.errorf(n, path, "expected a mapping of NAME: value, got %s", describe(n))
		return nil
	}
	out := map[string]string{}
	for _, p := range s.pairs(n, path) {
		fp := join(path, p.key)
		if !envName.MatchString(p.key) {
			s.errorf(p.k, fp, "%q is not an environment variable name", p.key)
			continue
		}
		if v, ok := s.text(p.v, fp); ok {
			out[p.key] = v
			if hook {
				s.envExpansion(p.v, fp, v)
			}
		}
	}
	return out
}

// envRef finds ${NAME} (or ${NAME:-...} and the like) in an env: value.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`)

// envExpansion refuses a hook's env: value that refers to ${NAME}:
// hookd passes values as written, so the process would get the text
// "${NAME}", not hookd's variable; secrets: and env_passthrough: are how
// a hook's processes get hookd's variables.
func (s *state) envExpansion(n *yaml.Node, path, v string) {
	m := envRef.FindAllStringSubmatch(v, -1)
	if m == nil {
		return
	}
	var names []string
	for _, sm := range m {
		if !slices.Contains(names, sm[1]) {
			names = append(names, sm[1])
		}
	}
	s.errorf(n, path, "%q is passed as written: hookd expands no variables in env:; to give the hook's processes "+
		"hookd's %s, list it in secrets: (redacted from records) or env_passthrough: (not redacted) instead",
		v, strings.Join(names, ", "))
}

// names decodes a list of non-empty strings and reports whether the key
// was given with a list.
func (s *state) names(f *fields, key string, dst *[]string) bool {
	n, ok := f.decode(key, dst)
	if !ok {
		return false
	}
	for i, v := range *dst {
		if v == "" {
			s.errorf(n.Content[i], index(key, i), "must not be empty")
		}
	}
	return true
}

// llm decodes model settings; model takes any scalar as written.
func (s *state) llm(n *yaml.Node, path string, c *engine.LLMConfig) {
	f := s.fields(n, path, llmKeys, nil)
	if m := f.get("model"); m != nil {
		c.Model, _ = s.text(m, join(path, "model"))
	}
	if u, ok := f.decode("base_url", &c.BaseURL); ok && c.BaseURL != "" { // empty: the default, as in agent-queue
		if err := checkURL(c.BaseURL); err != nil {
			s.errorf(u, join(path, "base_url"), "%s", err)
		}
	}
	var provider string
	if p, ok := f.decode("provider", &provider); ok {
		if u, err := providerURL(provider); err != nil {
			s.errorf(p, join(path, "provider"), "%s", err)
		} else if c.BaseURL == "" {
			c.BaseURL = u
		}
	}
	if e, ok := f.decode("api_key_env", &c.APIKeyEnv); ok && !envName.MatchString(c.APIKeyEnv) {
		s.errorf(e, join(path, "api_key_env"), "%q is not an environment variable name", c.APIKeyEnv)
	}
	if r, ok := f.decode("max_rounds", &c.MaxRounds); ok {
		nonNegative(s, r, join(path, "max_rounds"), c.MaxRounds)
	}
	if t, ok := f.decode("tool_choice", &c.ToolChoice); ok && !hookName.MatchString(c.ToolChoice) {
		s.errorf(t, join(path, "tool_choice"), "must be auto, none, required or a tool name (got %q)", c.ToolChoice)
	}
	if t, ok := f.decode("tool_choice_rounds", &c.ToolChoiceRounds); ok && c.ToolChoiceRounds != engine.ToolChoiceFirst && c.ToolChoiceRounds != engine.ToolChoiceAll {
		s.errorf(t, join(path, "tool_choice_rounds"), "must be %s or %s (got %q)", engine.ToolChoiceFirst, engine.ToolChoiceAll, c.ToolChoiceRounds)
	}
	var parallel bool
	if _, ok := f.decode("parallel_tool_calls", &parallel); ok {
		c.ParallelToolCalls = &parallel
	}
	if t, ok := f.decode("on_truncated", &c.OnTruncated); ok && c.OnTruncated != engine.TruncatedWarn && c.OnTruncated != engine.TruncatedFail {
		s.errorf(t, join(path, "on_truncated"), "must be %s or %s (got %q)", engine.TruncatedWarn, engine.TruncatedFail, c.OnTruncated)
	}
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}

// tokenBudget decodes budget, and its top-level alias max_tokens_per_run.
func (s *state) tokenBudget(f *fields, b *budget.Hook) {
	var inner, perRun *yaml.Node
	if n := f.get("budget"); n != nil {
		bf := s.fields(n, "budget", []string{"max_tokens_per_run", "per_hour", "per_day"}, nil)
		inner = bf.get("max_tokens_per_run")
		if m, ok := bf.decode("max_tokens_per_run", &b.MaxTokensPerRun); ok {
			nonNegative(s, m, "budget.max_tokens_per_run", b.MaxTokensPerRun)
			perRun = m
		}
		s.spendLimits(bf, &b.PerHour, &b.PerDay)
		if perRun != nil {
			s.perRunWithin(perRun, "budget.max_tokens_per_run", int64(b.MaxTokensPerRun), b.PerHour, b.PerDay)
		}
	}
	top := f.get("max_tokens_per_run")
	if top == nil {
		return
	}
	if inner != nil {
		s.add(f.keyLine("max_tokens_per_run"), "max_tokens_per_run",
			"max_tokens_per_run is an alias of budget.max_tokens_per_run, which is also given; keep one")
		return
	}
	if s.decodeAt(top, "max_tokens_per_run", &b.MaxTokensPerRun) {
		nonNegative(s, top, "max_tokens_per_run", b.MaxTokensPerRun)
		s.perRunWithin(top, "max_tokens_per_run", int64(b.MaxTokensPerRun), b.PerHour, b.PerDay)
	}
}

// envNames decodes a list of environment variable names.
func (s *state) envNames(f *fields, key string, dst *[]string) {
	if n, ok := f.decode(key, dst); ok {
		for i, name := range *dst {
			if !envName.MatchString(name) {
				s.errorf(n.Content[i], index(key, i), "%q is not an environment variable name", name)
			}
		}
	}
}
