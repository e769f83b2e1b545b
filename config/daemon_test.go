package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

func TestLoadDaemonDefaults(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"", "# only a comment\n", "{}\n"} {
		d, err := LoadDaemon(strings.NewReader(src), "/etc/hookd/hookd.yaml")
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		want := &Daemon{
			File: "/etc/hookd/hookd.yaml", SettingsPath: "/etc/hookd/hookd.yaml", HooksDir: "/etc/hookd/hooks.d", DB: "/etc/hookd/.hookd/hookd.db",
			MaxConcurrent: 4, Tick: time.Second, QueueSize: 100, Grace: 30 * time.Second, StoreTimeout: 10 * time.Second,
			DefaultTimeout: 30 * time.Minute, MaxCatchup: 10, LogFormat: "text",
			TokenEnv: "HOOKD_TOKEN", OverdueGrace: time.Minute, PromptValueMax: 16 << 10,
			LLM:        engine.LLMConfig{APIKeyEnv: "OPENAI_API_KEY", MaxRounds: 10},
			Retention:  engine.Retention{Runs: 30 * 24 * time.Hour, KeepLast: 100, Events: 7 * 24 * time.Hour, Skipped: 3 * 24 * time.Hour},
			PruneEvery: time.Hour,
			Node:       Node{HeartbeatTimeout: 10 * time.Second},

			HooksDirDefault: true,
		}
		if !reflect.DeepEqual(d, want) {
			t.Errorf("%q:\n got %+v\nwant %+v", src, d, want)
		}
	}
}

func TestLoadDaemon(t *testing.T) {
	t.Parallel()
	src := `
hooks_dir: hooks
db: /var/lib/hookd/state.db
max_concurrent: 2
tick: 250ms
queue_size: 5
grace: 0s
default_timeout: 1h
max_catchup: 1
log_format: json
listen: 127.0.0.1:8787
prompt_value_max: 4096
llm:
  model: 4
  base_url: https://llm.example/v1
  api_key_env: LLM_KEY
retention:
  runs: 90d
  keep_last: 0
  events: 1d12h
  skipped: 0
  every: 10m
node: {name: worker-a, max_concurrent: 8, heartbeat_timeout: 3s}
sandbox: off
`
	d, err := LoadDaemon(strings.NewReader(src), "/srv/hookd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Daemon{
		File: "/srv/hookd.yaml", SettingsPath: "/srv/hookd.yaml", HooksDir: "/srv/hooks", DB: "/var/lib/hookd/state.db",
		MaxConcurrent: 2, Tick: 250 * time.Millisecond, QueueSize: 5, Grace: 0, StoreTimeout: DefaultStoreTimeout,
		DefaultTimeout: time.Hour, MaxCatchup: 1, LogFormat: "json", Listen: "127.0.0.1:8787",
		TokenEnv: "HOOKD_TOKEN", OverdueGrace: time.Minute, PromptValueMax: 4096,
		LLM:        engine.LLMConfig{Model: "4", BaseURL: "https://llm.example/v1", APIKeyEnv: "LLM_KEY", MaxRounds: 10},
		Retention:  engine.Retention{Runs: 90 * 24 * time.Hour, KeepLast: 0, Events: 36 * time.Hour, Skipped: 0},
		PruneEvery: 10 * time.Minute,
		Node:       Node{Name: "worker-a", MaxConcurrent: 8, HeartbeatTimeout: 3 * time.Second},
		SandboxOff: true,
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("\n got %+v\nwant %+v", d, want)
	}
}

func TestLoadDaemonErrors(t *testing.T) {
	t.Parallel()
	src := `hooks_dir: ""
max_concurent: 3
max_concurrent: 0
tick: 0s
queue_size: -1
grace: 10
default_timeout: -1m
max_catchup: 0
log_format: xml
listen: localhost
llm: {model: [a], max_rounds: -2}
retention:
  runs: 30
  keep_last: -1
  events: 7days
  skiped: 3d
  every: 0s
node: {name: "a b", max_concurrent: 0, heartbeat_timeout: 100ms, nme: x}
sandbox: maybe
`
	_, err := LoadDaemon(strings.NewReader(src), "hookd.yaml")
	want := `hookd.yaml:1: hooks_dir: must not be empty
hookd.yaml:2: max_concurent: unknown field; did you mean max_concurrent?
hookd.yaml:3: max_concurrent: must be >= 1 (got 0)
hookd.yaml:4: tick: must be > 0 (got 0s)
hookd.yaml:5: queue_size: must be >= 1 (got -1)
hookd.yaml:6: grace: a duration needs a unit: write 10s or 10m, not 10
hookd.yaml:7: default_timeout: must be > 0 (got -1m)
hookd.yaml:8: max_catchup: must be >= 1 (got 0)
hookd.yaml:9: log_format: must be text or json (got "xml")
hookd.yaml:10: listen: want host:port, like 127.0.0.1:8787 (got "localhost")
hookd.yaml:11: llm.model: expected a string, got a list
hookd.yaml:11: llm.max_rounds: must be >= 0 (got -2)
hookd.yaml:13: retention.runs: an age needs a unit: write 30d or 30h, not 30
hookd.yaml:14: retention.keep_last: must be >= 0 (got -1)
hookd.yaml:15: retention.events: bad age "7days" (want a number with a unit: 30d, 12h, 90m; 0 keeps forever)
hookd.yaml:16: retention.skiped: unknown field; did you mean skipped?
hookd.yaml:17: retention.every: must be > 0 (got 0s)
hookd.yaml:18: node.nme: unknown field; did you mean name?
hookd.yaml:18: node.name: want letters, digits, '.', '_' and '-', starting with a letter or digit, at most 63 (got "a b")
hookd.yaml:18: node.max_concurrent: must be >= 1 (got 0)
hookd.yaml:18: node.heartbeat_timeout: must be >= 1s (got 100ms)
hookd.yaml:19: sandbox: must be on or off (got "maybe"); off starts every process of a hook with hookd's own rights`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	if _, err := LoadDaemon(strings.NewReader("[1]\n"), "hookd.yaml"); err == nil ||
		err.Error() != "hookd.yaml:1: the top level must be a mapping of field: value, got a list" {
		t.Errorf("list: %v", err)
	}
}

func TestLoadDaemonFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hookd.yaml")
	d, err := LoadDaemonFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// SettingsPath names the file even when it does not exist, so that
	// no tool may create it.
	if d.File != "" || d.SettingsPath != path || d.HooksDir != filepath.Join(dir, "hooks.d") || d.MaxConcurrent != 4 {
		t.Errorf("missing file: %+v", d)
	}
	if err := os.WriteFile(path, []byte("max_concurrent: 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = LoadDaemonFile(path)
	if err != nil || d.MaxConcurrent != 9 || d.File != path || d.SettingsPath != path || d.DB != filepath.Join(dir, ".hookd", "hookd.db") {
		t.Errorf("file: %+v %v", d, err)
	}
	if _, err := LoadDaemonFile(dir); err == nil {
		t.Errorf("a directory loaded")
	}
}
