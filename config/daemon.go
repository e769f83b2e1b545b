package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
	"gopkg.in/yaml.v3"
)

// Daemon is the daemon's settings, from hookd.yaml.
type Daemon struct {
	File           string                // the settings file read, "" when none was
	SettingsPath   string                // the settings file looked for, absolute, whether or not it exists
	HooksDir       string                // hooks_dir: absolute
	DB             string                // db: absolute path of the SQLite file; with database set, names the node's state (socket) only
	Database       string                // database: a postgres:// URL (database.go); "" keeps the store in the SQLite file db
	MaxConcurrent  int                   // max_concurrent: runs at once, >= 1
	Tick           time.Duration         // tick: longest sleep of the loop, > 0
	QueueSize      int                   // queue_size: runs waiting for a slot, >= 1
	Grace          time.Duration         // grace: how long a stop waits for runs, >= 0
	StoreTimeout   time.Duration         // store_timeout: how long a store write may take before the store counts as stalled
	DefaultTimeout time.Duration         // default_timeout: a run's timeout when its hook sets none, > 0
	MaxCatchup     int                   // max_catchup: missed slots fired with on_missed: all, >= 1
	LogFormat      string                // log_format: text or json
	Listen         string                // listen: optional host:port for the TCP API
	DashboardHosts []string              // dashboard_hosts: host names the dashboard answers to besides addresses and localhost
	TokenEnv       string                // token_env: the variable holding the TCP API's bearer token
	TokenFile      string                // token_file: or a file holding it (absolute)
	OverdueGrace   time.Duration         // overdue_grace: how late a periodic hook may be before it counts as overdue
	PromptValueMax int                   // prompt_value_max: bytes kept of each value inserted into a prompt
	Notify         []engine.NotifyTarget // notify: webhooks told about every hook's runs
	LLM            engine.LLMConfig      // llm: defaults for every hook's model settings
	MCPServers     []MCPServer           // mcp_servers: MCP servers whose tools hooks may list, in file order
	Retention      engine.Retention      // retention: how long runs, skip records and events are kept
	Budget         budget.Daemon         // budget: tokens all hooks together may use per hour and day; prices per model
	PruneEvery     time.Duration         // retention.every: how often the daemon prunes
	Node           Node                  // node: this node's settings in a cluster on PostgreSQL (node.go)
	OTel           OTel                  // otel: where runs go as OpenTelemetry traces
	// AllowInsecureHooks (allow_insecure_hooks) loads a hooks directory
	// and hook files that are writable by every user or owned by another
	// user, which are refused by default.
	AllowInsecureHooks bool
	// SandboxOff (sandbox: off) starts every process of a hook with
	// hookd's own rights, on purpose: nothing is contained, and hooks that
	// take untrusted input run where containment is missing. Read at
	// start only.
	SandboxOff bool
	// HooksDirDefault says HooksDir is the default hooks.d beside the
	// settings: neither hookd.yaml nor --hooks named one. Only that
	// directory is created when missing at start (a named one that does
	// not exist is an error: usually a typo). SetHooksDir clears it.
	HooksDirDefault bool
	// Sequential (lifecycle: POINT: {sequential: true}) are the void
	// lifecycle points whose handlers run one at a time, by priority,
	// instead of concurrently (handlers come from many files, so the
	// point's behaviour is set here, once).
	Sequential []engine.Point
}

// lifecycle decodes lifecycle: a mapping of lifecycle point to its
// settings ({sequential: true}); it returns the sequential points.
func (s *state) lifecycle(n *yaml.Node, path string) []engine.Point {
	if n.Kind != yaml.MappingNode {
		s.errorf(n, path, "expected a mapping of POINT: {sequential: true}, got %s", describe(n))
		return nil
	}
	var seq []engine.Point
	for _, p := range s.pairs(n, path) {
		fp := join(path, p.key)
		point := engine.Point(p.key)
		if !slices.Contains(engine.Points(), point) {
			s.errorf(p.k, fp, "unknown lifecycle point %q (points: %s)", p.key, pointNames())
			continue
		}
		f := s.fields(resolve(p.v), fp, []string{"sequential"}, nil)
		var on bool
		if v, ok := f.decode("sequential", &on); ok && on {
			if point.Model() != engine.ModelVoid {
				s.errorf(v, join(fp, "sequential"), "%s is a %s point: its handlers run one at a time, by priority, already; "+
					"sequential applies to void points", point, point.Model())
				continue
			}
			seq = append(seq, point)
		}
	}
	return seq
}

// pointNames lists the lifecycle points, for errors.
func pointNames() string {
	var names []string
	for _, p := range engine.Points() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

// SetHooksDir applies a hooks directory given outside hookd.yaml
// (--hooks DIR, validate's DIR): named, so never created when missing.
func (d *Daemon) SetHooksDir(dir string) {
	d.HooksDir, d.HooksDirDefault = dir, false
}

// HookOptions are the options the hooks directory is loaded with.
func (d *Daemon) HookOptions() Options {
	mcp := make([]string, len(d.MCPServers))
	for i, m := range d.MCPServers {
		mcp[i] = m.Name
	}
	return Options{AllowInsecure: d.AllowInsecureHooks, Protected: d.OwnPaths(), MCPServers: mcp, Unconfined: d.unconfinedMCP(), LLM: d.LLM}
}

// CheckOptions are the options `hookd validate` checks the hooks
// directory with: HookOptions, and the environment the hooks would run
// in, read by env and named by from (the running daemon's, or the
// shell's when no daemon answers): a hook that needs a model none names
// is an error, a key variable env lacks a warning (Options.Env).
func (d *Daemon) CheckOptions(env func(string) (string, bool), from string) Options {
	o := d.HookOptions()
	o.Env, o.EnvFrom = env, from
	return o
}

// unconfinedMCP are the stdio servers that declare no sandbox network
// (and so do not start), unless sandbox: off runs every process as it is.
func (d *Daemon) unconfinedMCP() map[string]bool {
	var out map[string]bool
	for _, s := range d.MCPServers {
		if s.Command != nil && (s.Sandbox == nil || s.Sandbox.Network == nil) && !d.SandboxOff {
			if out == nil {
				out = map[string]bool{}
			}
			out[s.Name] = true
		}
	}
	return out
}

// ProcJournalSuffix names the process journal after the database file
// (hookd.db.procs).
const ProcJournalSuffix = ".procs"

// OwnPaths lists hookd's own paths, which no tool may write or read and
// no hook's writes: may touch: the settings file whether or not one was
// read (a model must not create one), the file read if it has another
// name, the token file, the state directory (the database, its lock,
// process journal and socket: with db: hookd.db that is the directory
// of hookd.yaml) and the database's own files and the journal, named so
// that they stay protected from reading when the state directory is also
// a hook's workdir (tools/protect.go decides). The hooks directory is
// not among them: it is passed on its own.
func (d *Daemon) OwnPaths() []string {
	var out []string
	for _, p := range []string{d.SettingsPath, d.File, d.TokenFile, filepath.Dir(d.DB)} {
		if p != "" {
			out = append(out, absPath(p))
		}
	}
	if d.DB != "" {
		db := absPath(d.DB)
		for _, suffix := range []string{"", "-wal", "-shm", "-journal", ".lock", ProcJournalSuffix} {
			out = append(out, db+suffix)
		}
		out = append(out, strings.TrimSuffix(db, filepath.Ext(db))+".sock") // the API socket
		// SQLite keeps its -wal, -shm and -journal beside the database
		// file's real path: beside the target of a db: that is a
		// symbolic link (as store.Open narrows them).
		if real, err := filepath.EvalSymlinks(db); err == nil && real != db {
			for _, suffix := range []string{"-wal", "-shm", "-journal"} {
				out = append(out, real+suffix)
			}
		}
	}
	return out
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// Default daemon settings.
const (
	DefaultHooksDir       = "hooks.d"
	DefaultDB             = ".hookd/hookd.db"
	DefaultMaxConcurrent  = 4
	DefaultTick           = time.Second
	DefaultQueueSize      = 100
	DefaultGrace          = 30 * time.Second
	DefaultStoreTimeout   = 10 * time.Second
	DefaultTimeout        = 30 * time.Minute
	DefaultMaxCatchup     = 10
	DefaultTokenEnv       = "HOOKD_TOKEN"
	DefaultOverdueGrace   = time.Minute
	DefaultPromptValueMax = 16 << 10
	DefaultLogFormat      = "text"
	DefaultAPIKeyEnv      = engine.DefaultAPIKeyEnv
	DefaultMaxRounds      = 10
)

var daemonKeys = []string{"hooks_dir", "db", "database", "max_concurrent", "tick", "queue_size", "grace", "store_timeout",
	"default_timeout", "max_catchup", "log_format", "listen", "dashboard_hosts", "llm",
	"token_env", "token_file", "overdue_grace", "prompt_value_max", "notify", "mcp_servers", "retention", "allow_insecure_hooks", "budget",
	"node", "sandbox", "lifecycle", "otel"}

// OTel is otel: in hookd.yaml: runs go as OpenTelemetry traces to a
// collector over OTLP/HTTP (tracing).
type OTel struct {
	// Endpoint is the collector's address, like http://127.0.0.1:4318;
	// "" leaves it to OTEL_EXPORTER_OTLP_ENDPOINT (or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and with neither, no traces.
	Endpoint string            `yaml:"endpoint"`
	Headers  map[string]string `yaml:"headers"` // sent with each export, like an API key
	// Content adds the prompt, the answer and the model's text to the
	// spans (redacted as the record is); off by default.
	Content     bool   `yaml:"content"`
	ServiceName string `yaml:"service_name"` // service.name; default hookd (OTEL_SERVICE_NAME wins)
}

// Enabled reports whether runs are sent as traces: otel.endpoint, or the
// OTLP endpoint variables in getenv's environment.
func (o OTel) Enabled(getenv func(string) string) bool {
	return o.Endpoint != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// defaultDaemon returns the default settings, with paths in dir.
func defaultDaemon(dir string) *Daemon {
	return &Daemon{
		HooksDir:       filepath.Join(dir, DefaultHooksDir),
		DB:             filepath.Join(dir, DefaultDB),
		MaxConcurrent:  DefaultMaxConcurrent,
		Tick:           DefaultTick,
		QueueSize:      DefaultQueueSize,
		Grace:          DefaultGrace,
		StoreTimeout:   DefaultStoreTimeout,
		DefaultTimeout: DefaultTimeout,
		MaxCatchup:     DefaultMaxCatchup,
		LogFormat:      DefaultLogFormat,
		TokenEnv:       DefaultTokenEnv,
		OverdueGrace:   DefaultOverdueGrace,
		PromptValueMax: DefaultPromptValueMax,
		LLM:            engine.LLMConfig{APIKeyEnv: DefaultAPIKeyEnv, MaxRounds: DefaultMaxRounds},
		Retention:      defaultRetention(),
		PruneEvery:     DefaultPruneEvery,
		Node:           Node{HeartbeatTimeout: DefaultHeartbeatTimeout},

		HooksDirDefault: true,
	}
}

// LoadDaemon reads daemon settings from r; file names it in errors, and
// relative paths in it resolve against file's directory. Keys left out
// keep their defaults; an empty file is all defaults. The error, if any,
// is an Errors list.
func LoadDaemon(r io.Reader, file string) (*Daemon, error) {
	data, err := readAll(r)
	if err != nil {
		return nil, &Error{File: file, Msg: fmt.Sprintf("read: %s", err), Err: err}
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, &Error{File: file, Msg: err.Error(), Err: err}
	}
	d := defaultDaemon(dir)
	d.File = file
	d.SettingsPath = filepath.Join(dir, filepath.Base(file))
	s := newState(file)
	top := s.parseDoc(data, true)
	if top != nil {
		s.daemon(s.fields(top, "", daemonKeys, nil), d, dir)
	}
	if l := s.result(); l != nil {
		return nil, l
	}
	return d, nil
}

// LoadDaemonFile reads daemon settings from path. A missing file means
// the defaults, with paths resolved against path's directory.
func LoadDaemonFile(path string) (*Daemon, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		dir, err := filepath.Abs(filepath.Dir(path))
		if err != nil {
			return nil, &Error{File: path, Msg: err.Error(), Err: err}
		}
		d := defaultDaemon(dir)
		d.SettingsPath = filepath.Join(dir, filepath.Base(path))
		return d, nil
	}
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("read: %s", err), Err: err}
	}
	defer f.Close()
	return LoadDaemon(f, path)
}

func (s *state) daemon(f *fields, d *Daemon, dir string) {
	for _, p := range []struct {
		key string
		dst *string
	}{{"hooks_dir", &d.HooksDir}, {"db", &d.DB}} {
		var v string
		if n, ok := f.decode(p.key, &v); ok {
			if p.dst == &d.HooksDir {
				d.HooksDirDefault = false
			}
			switch {
			case v == "":
				s.errorf(n, p.key, "must not be empty")
			case filepath.IsAbs(v):
				*p.dst = filepath.Clean(v)
			default:
				*p.dst = filepath.Join(dir, v)
			}
		}
	}
	if n, ok := f.decode("database", &d.Database); ok {
		if err := CheckDatabaseURL(d.Database); err != nil {
			s.errorf(n, "database", "%v", err)
		}
	}
	for _, p := range []struct {
		key string
		dst *int
	}{{"max_concurrent", &d.MaxConcurrent}, {"queue_size", &d.QueueSize}, {"max_catchup", &d.MaxCatchup}} {
		if n, ok := f.decode(p.key, p.dst); ok && *p.dst < 1 {
			s.errorf(n, p.key, "must be >= 1 (got %d)", *p.dst)
		}
	}
	if n, ok := f.decode("tick", &d.Tick); ok {
		positive(s, n, "tick", d.Tick)
	}
	if n, ok := f.decode("default_timeout", &d.DefaultTimeout); ok {
		positive(s, n, "default_timeout", d.DefaultTimeout)
	}
	if n, ok := f.decode("grace", &d.Grace); ok {
		nonNegative(s, n, "grace", d.Grace)
	}
	if n, ok := f.decode("store_timeout", &d.StoreTimeout); ok {
		positive(s, n, "store_timeout", d.StoreTimeout)
	}
	if n, ok := f.decode("log_format", &d.LogFormat); ok && d.LogFormat != "text" && d.LogFormat != "json" {
		s.errorf(n, "log_format", "must be text or json (got %q)", d.LogFormat)
	}
	if n, ok := f.decode("listen", &d.Listen); ok {
		if _, _, err := net.SplitHostPort(d.Listen); err != nil {
			s.errorf(n, "listen", "want host:port, like 127.0.0.1:8787 (got %q)", d.Listen)
		}
	}
	if n, ok := f.decode("dashboard_hosts", &d.DashboardHosts); ok {
		for _, h := range d.DashboardHosts {
			if h == "" || strings.ContainsAny(h, ":/ \t") {
				s.errorf(n, "dashboard_hosts", "want host names without port or scheme, like hookd.lan (got %q)", h)
			}
		}
	}
	s.apiSettings(f, d, dir)
	if n, ok := f.decode("overdue_grace", &d.OverdueGrace); ok {
		nonNegative(s, n, "overdue_grace", d.OverdueGrace)
	}
	if n, ok := f.decode("prompt_value_max", &d.PromptValueMax); ok {
		positive(s, n, "prompt_value_max", d.PromptValueMax)
	}
	if n := f.get("notify"); n != nil {
		d.Notify = s.notify(n, "notify", nil)
	}
	f.decode("allow_insecure_hooks", &d.AllowInsecureHooks)
	if n := f.get("sandbox"); n != nil {
		if v, ok := s.text(n, "sandbox"); ok {
			switch v {
			case "on", "true":
			case "off", "false":
				d.SandboxOff = true
			default:
				s.errorf(n, "sandbox", "must be on or off (got %q); off starts every process of a hook with hookd's own rights", v)
			}
		}
	}
	if n := f.get("llm"); n != nil {
		s.llm(n, "llm", &d.LLM)
		if d.LLM.MaxRounds == 0 {
			d.LLM.MaxRounds = DefaultMaxRounds
		}
	}
	if n := f.get("lifecycle"); n != nil {
		d.Sequential = s.lifecycle(n, "lifecycle")
	}
	if n, ok := f.decode("otel", &d.OTel); ok && d.OTel.Endpoint != "" {
		if u, err := url.Parse(d.OTel.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			s.errorf(n, "otel.endpoint", "want the collector's OTLP/HTTP address, like http://127.0.0.1:4318 (got %q)", d.OTel.Endpoint)
		}
	}
	if n := f.get("mcp_servers"); n != nil {
		d.MCPServers = s.mcpServers(n, "mcp_servers", dir)
	}
	if n := f.get("retention"); n != nil {
		s.retention(n, "retention", &d.Retention, &d.PruneEvery)
	}
	if n := f.get("budget"); n != nil {
		s.daemonBudget(n, "budget", &d.Budget)
	}
	if n := f.get("node"); n != nil {
		s.node(s.fields(n, "node", nodeKeys, nil), &d.Node)
	}
}

// LoadDaemonLenient reads what a command that only reads needs of a
// settings file that does not load (LoadDaemonFile's error): where the
// database and the hooks directory are, from db, database and hooks_dir
// when those keys alone are valid, else the defaults. from says which it
// took ("its db, hooks_dir" or "the defaults"). nil when even that fails
// (the file cannot be read).
func LoadDaemonLenient(path string) (d *Daemon, from string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, ""
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, ""
	}
	d = defaultDaemon(dir)
	d.File = path // read, if not loaded
	d.SettingsPath = filepath.Join(dir, filepath.Base(path))
	from = "the defaults"
	var top map[string]any
	if yaml.Unmarshal(data, &top) == nil {
		keep := map[string]any{}
		for _, k := range []string{"db", "database", "hooks_dir"} {
			if v, ok := top[k].(string); ok {
				keep[k] = v
			}
		}
		if len(keep) > 0 {
			b, _ := yaml.Marshal(keep)
			if kd, err := LoadDaemon(bytes.NewReader(b), path); err == nil {
				d.HooksDir, d.HooksDirDefault, d.DB, d.Database = kd.HooksDir, kd.HooksDirDefault, kd.DB, kd.Database
				from = "its " + strings.Join(slices.Sorted(maps.Keys(keep)), ", ")
			}
		}
	}
	return d, from
}
