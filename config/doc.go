// Package config loads hookd's files strictly: hook files (hooks.d/*.yaml,
// *.yml, *.json) into engine.Hook values, and the daemon settings file
// hookd.yaml into a Daemon.
//
// It also writes the one project hookd makes (hookd init): Starter's
// hookd.yaml for a ModelServer and a first hook, which WriteStarter puts
// in a directory without overwriting anything.
//
// Parsing reads from an io.Reader (ParseHook, LoadDaemon); reading files
// is separate (LoadDir, LoadDaemonFile). JSON files go through the same
// YAML parser, so both formats behave alike.
//
// # Errors
//
// Every problem is an *Error whose text is "file:line: field.path:
// message", for example
//
//	hooks.d/triage.yaml:14: steps[2].timeout: must be > 0 (got -1s)
//
// Field paths use dots for keys and [i] for list items, counted from 0 as
// in Go and as placeholders count steps (steps[0] is the step {{step_0}}
// names, as in agent-queue). A file's problems
// are collected, as far as one does not hide the next, into an Errors list
// sorted by line. A YAML syntax error is reported the same way.
//
// # Strictness
//
// An unknown key is an error, with a "did you mean X?" when one is close.
// A value of the wrong type is an error: a string field does not take a
// number (quote it), a boolean is true or false. The exceptions: llm.model
// takes any scalar as written (model: 4 is "4"), and env values take any
// scalar as written (PORT: 8080 is "8080", and a null value is ""). Any
// other null value (key: with nothing after it) is the same as leaving the
// key out. YAML anchors, aliases and merge keys (<<) work; a key given
// twice is an error. A file is at most 4 MiB; at most 50 errors are
// listed per file.
//
// Durations are Go duration strings: 500ms, 90s, 15m, 2h (no d for days).
// A bare number is an error that says to add a unit, except 0. Keys that
// end in _seconds (cooldown_seconds, interval_seconds) take whole seconds.
//
// # Hook files
//
// The canonical keys are those of the design's hook file; the agent-queue
// names are accepted as aliases, and giving a key and its alias is an
// error:
//
//	context_steps       -> steps
//	prompt_template     -> prompt
//	cooldown_seconds    -> cooldown (whole seconds)
//	llm_config          -> llm
//	max_tokens_per_run  -> budget.max_tokens_per_run (at the top level)
//	trigger {type: periodic, interval_seconds: N} -> trigger {every: Ns}
//	trigger {type: periodic} -> trigger {every: 3600s} (agent-queue's default)
//	trigger {type: event, event_type: P}          -> trigger {event: P}
//
// Defaults: name is the file name without its extension; enabled is true;
// overlap is skip; timeout left out means the daemon's default_timeout
// (given, it is > 0); cooldown is 0; no trigger means the hook is fired by
// hand only; plugins left out means every handler applies, while
// plugins: [] means none of the plugins' (PluginsSet tells them apart).
// llm fields left out, and max_rounds 0, fall back to hookd.yaml.
//
// Names: a hook name is made of letters, digits, '_', '.' and '-'; a step
// name of letters, digits, '_' and '-', unique within its hook.
//
// Workdir: a relative workdir resolves against Options.Root, which is also
// the default workdir. LoadDir sets Root to the parent of the hooks
// directory, the project root that holds hooks.d, so workdir: . is the
// project. The result is an absolute, clean path; ~ is not expanded and
// the directory is not required to exist when the file is loaded.
//
// Trigger: exactly one of every, cron, event or watch. every is at least
// 1s. timezone, jitter (>= 0, less than the every interval), on_missed
// (skip, latest, all; default latest) and max_catchup (>= 1; left out
// means the daemon's) apply to every and cron only; where (payload
// filters) applies to event only. The agent-queue type key is accepted
// beside its aliases and must agree with the trigger kind. The schedule is compiled when the file loads (so a bad cron
// expression is an error at its line), in the trigger's time zone, the
// local one by default. A watch needs paths, which resolve against the
// hook's workdir; extensions get a leading dot if they lack one; debounce
// defaults to 500ms; max_wait, when set, is at least debounce.
//
// Steps: the keys name, type (required), timeout, required,
// allow_failure (not with required: true) and the skip_llm_if*
// conditions belong to every step; the remaining keys are
// handed to the step kind registered under type, through a Decoder that
// decodes them as strictly as the rest of the file. A kind that does not
// decode them leaves them reported as unknown.
//
// Placeholders are checked when the file loads: every string among a
// step's kind-specific fields may only name earlier steps, a step's
// skip_llm_if may also name the step itself, and the prompt may name any
// step. An unknown root, a step name that does not exist or a step_N out
// of range is an error at the line of the placeholder.
//
// Source.Version is the first 12 hex digits of the SHA-256 of the file.
//
// # Daemon settings
//
// hookd.yaml holds the daemon's settings; every key is optional and an
// empty or missing file means the defaults (see the Default* constants):
// hooks_dir hooks.d, db .hookd/hookd.db, max_concurrent 4, tick 1s,
// queue_size 100, grace 30s, default_timeout 30m, max_catchup 10,
// log_format text, no listen address, and llm defaults of api_key_env
// OPENAI_API_KEY and max_rounds 10. Relative paths resolve against the
// directory of the settings file.
//
// node (name, max_concurrent, heartbeat_timeout) is this node's part in a
// cluster on PostgreSQL (database:): name defaults to the host name,
// max_concurrent to the daemon's (then the whole cluster's cap), and
// heartbeat_timeout to 10s, at least 1s; heartbeats come every fifth of
// it (see Node and docs/cluster.md).
//
// listen (host:port) also serves the API on TCP; its bearer token is read
// from the environment variable named by token_env (default HOOKD_TOKEN)
// or from token_file (relative to the settings file), never from the file
// itself; giving both is an error. overdue_grace (default 1m, >= 0) is how
// late a periodic hook may be before it counts as overdue.
//
// notify, in hookd.yaml and in a hook file, is a list of webhook targets:
// name, url or url_env (exactly one), format (generic, slack or discord;
// default generic) and on (outcomes: started, completed, failed, skipped,
// cancelled; default [failed], never empty). In a hook file it replaces the
// daemon-wide list for that hook (Hook.NotifySet); notify: [] silences it.
// Errors about url never repeat it: a webhook URL may hold a secret.
//
// retention, in hookd.yaml, says how long history is kept: runs (default
// 30d), keep_last (100: each hook's newest runs, kept whatever their age),
// events (7d), skipped (3d: skip and drop records) and every (1h: how often
// the daemon prunes). Ages are Go durations or whole days (30d, 1d12h); 0
// keeps that kind forever. In a hook file, retention may set runs and
// keep_last for that hook's runs (Hook.Retention).
package config
