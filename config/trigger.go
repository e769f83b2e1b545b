package config

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/human"
	"github.com/hookd/hookd/triggers"
	"gopkg.in/yaml.v3"
)

var (
	triggerKeys = []string{"every", "cron", "schedule", "at", "event", "watch", "timezone", "jitter",
		"on_missed", "max_catchup", "where", "type", "skip_llm"}
	triggerAliases = map[string]string{"interval_seconds": "every", "event_type": "event", "fire_at": "at"}
	watchKeys      = []string{"paths", "recursive", "extensions", "include", "ignore",
		"debounce", "max_wait", "poll", "scan_on_start", "base_dir", "project_id", "include_hidden"}
)

// Defaults of a trigger.
const (
	DefaultDebounce = 500 * time.Millisecond // watch.debounce
	MinEvery        = time.Second            // shortest every interval
	// AgentQueueEvery is the interval of agent-queue's periodic trigger
	// written without interval_seconds (agent-queue's default).
	AgentQueueEvery = time.Hour
)

// trigger decodes a hook's trigger: exactly one of every, cron, event or
// watch, with the options that apply to it. For agent-queue's periodic
// trigger with both interval_seconds and schedule, the schedule is the
// trigger and interval is interval_seconds, which the hook's cooldown
// must be at least (agent-queue fired when both had passed).
func (s *state) trigger(n *yaml.Node, path string, h *engine.Hook) (interval time.Duration) {
	if n.Kind != yaml.MappingNode {
		s.errorf(n, path, "expected a mapping like {every: 1h}, got %s", describe(n))
		return 0
	}
	before := s.count()
	t := &h.Trigger
	t.OnMissed = engine.MissedLatest
	f := s.fields(n, path, triggerKeys, triggerAliases)
	// agent-queue's trigger.skip_llm: the hook runs its steps only.
	if sk := false; f.has("skip_llm") {
		if _, ok := f.decode("skip_llm", &sk); ok && sk {
			h.SkipLLM = true
		}
	}

	// Which kinds are written, in file order.
	type kindAt struct {
		kind     engine.TriggerKind
		key, alt string // canonical key and alias
		written  string // the one written
		line     int
	}
	// agent-queue's watch shape: {type: event, event_type: file.changed,
	// watch: {...}}. The event type names what the watch publishes; the
	// trigger is the watch.
	watchEvent := f.has("watch") && (f.has("event") || f.has("event_type"))
	// agent-queue's periodic trigger: a schedule adds to interval_seconds
	// (it fires when the interval has passed and the schedule matches).
	aq := isAgentQueueTrigger(n)
	aqBoth := aq && f.has("interval_seconds") && f.has("schedule")
	if aqBoth {
		in, ip := f.either("every", "interval_seconds")
		var secs time.Duration
		if s.decodeAt(in, ip, &secs) {
			if secs < MinEvery {
				s.errorf(in, ip, "must be at least %s (got %s)", human.Exact(MinEvery), written(in, secs))
			}
			interval = secs
		}
	}
	if watchEvent {
		en, ep := f.either("event", "event_type")
		var et string
		if en != nil && s.decodeAt(en, ep, &et) && et != engine.EventFileChanged && et != engine.EventFolderChanged {
			s.errorf(en, ep, "with watch, the event type must be %s or %s (what a watch publishes; got %q)",
				engine.EventFileChanged, engine.EventFolderChanged, et)
			return
		}
	}
	var kinds []kindAt
	for _, k := range []kindAt{
		{kind: engine.TriggerEvery, key: "every", alt: "interval_seconds"},
		{kind: engine.TriggerCron, key: "cron"},
		{kind: engine.TriggerCron, key: "schedule"},
		{kind: engine.TriggerAt, key: "at", alt: "fire_at"},
		{kind: engine.TriggerEvent, key: "event", alt: "event_type"},
		{kind: engine.TriggerWatch, key: "watch"},
	} {
		if k.kind == engine.TriggerEvent && watchEvent || k.kind == engine.TriggerEvery && aqBoth {
			continue
		}
		for _, key := range []string{k.key, k.alt} {
			if key != "" && f.has(key) {
				k.written, k.line = key, f.keyLine(key)
				kinds = append(kinds, k)
			}
		}
	}
	sort.SliceStable(kinds, func(i, j int) bool { return kinds[i].line < kinds[j].line })
	if len(kinds) > 1 {
		a, b := kinds[0], kinds[1]
		if a.key == b.key {
			f.either(a.key, a.alt) // reports the alias conflict
		} else {
			s.add(b.line, path, fmt.Sprintf("has both %s and %s; a hook has exactly one trigger kind", a.written, b.written))
		}
		return
	}

	var typ string
	typeNode, typeOK := f.decode("type", &typ)
	if typeOK && typ != "periodic" && typ != "event" && typ != "scheduled" {
		s.errorf(typeNode, join(path, "type"), "must be periodic, scheduled or event (got %q); or write every, cron, at, event or watch", typ)
		return
	}
	if len(kinds) == 0 && typ == "periodic" {
		// agent-queue: a periodic trigger without interval_seconds fires
		// every 3600 s.
		kinds = []kindAt{{kind: engine.TriggerEvery, key: "every", alt: "interval_seconds", line: typeNode.Line}}
	}
	if len(kinds) == 0 {
		switch typ {
		case "event":
			s.errorf(typeNode, join(path, "type"), "event needs event_type (or write event: PATTERN)")
		case "scheduled":
			s.errorf(typeNode, join(path, "type"), "scheduled needs fire_at (or write at: TIME)")
		case "":
			if typeNode == nil {
				s.errorf(n, path, "needs one of every, cron, schedule, at, event or watch (leave trigger out for a hook fired by hand)")
			}
		}
		return
	}
	t.Kind = kinds[0].kind
	if typeOK {
		want := "periodic"
		switch t.Kind {
		case engine.TriggerEvent, engine.TriggerWatch:
			want = "event"
		case engine.TriggerAt:
			want = "scheduled"
		}
		if typ != want {
			s.errorf(typeNode, join(path, "type"), "%s does not match the %s trigger; leave type out", typ, kinds[0].written)
		}
	}

	periodic := t.Periodic()
	onlyFor := func(key string, ok bool, which string) bool {
		if f.has(key) && !ok {
			s.add(f.keyLine(key), join(path, key), "only applies to "+which+" triggers")
			return false
		}
		return f.get(key) != nil
	}

	var kindNode *yaml.Node
	var kindPath string
	switch t.Kind {
	case engine.TriggerEvery:
		kindNode, kindPath = f.either("every", "interval_seconds")
		if kindNode == nil && kinds[0].written == "" {
			t.Every = AgentQueueEvery
			kindNode, kindPath = typeNode, join(path, "type")
		} else if kindNode == nil {
			s.add(kinds[0].line, kindPath, "must be a duration like 90s or 2h")
		} else if s.decodeAt(kindNode, kindPath, &t.Every) && t.Every < MinEvery {
			s.errorf(kindNode, kindPath, "must be at least %s (got %s)", human.Exact(MinEvery), written(kindNode, t.Every))
		}
	case engine.TriggerCron:
		if kinds[0].key == "schedule" {
			kindNode, kindPath = f.get("schedule"), join(path, "schedule")
			s.schedule(kindNode, kindPath, t, aq)
			break
		}
		kindPath = join(path, "cron")
		if kindNode = f.get("cron"); kindNode == nil {
			s.add(kinds[0].line, kindPath, "must be a cron expression like \"0 3 * * *\"")
		} else if s.decodeAt(kindNode, kindPath, &t.Cron) && strings.TrimSpace(t.Cron) == "" {
			s.errorf(kindNode, kindPath, "must not be empty")
		}
	case engine.TriggerEvent:
		kindNode, kindPath = f.either("event", "event_type")
		if kindNode == nil {
			s.add(kinds[0].line, kindPath, "must be an event pattern like deploy.*")
		} else if s.decodeAt(kindNode, kindPath, &t.Event) {
			if err := triggers.ValidatePattern(t.Event); err != nil {
				s.errorf(kindNode, kindPath, "%s", err)
			} else if triggers.ProgressOnly(t.Event) {
				s.errorf(kindNode, kindPath, "%q matches only progress events (hook.step.*, hook.llm.round, hook.tool.called), "+
					"which are streamed to watchers (hookd watch) but never start runs; react to a run's outcome with hook.run.* instead", t.Event)
			}
		}
	case engine.TriggerAt:
		kindNode, kindPath = f.either("at", "fire_at")
		if kindNode == nil {
			s.add(kinds[0].line, kindPath, "must be a time like 2026-12-01T09:00:00Z")
		}
	case engine.TriggerWatch:
		if w := f.get("watch"); w != nil {
			t.Watch = s.watch(w, join(path, "watch"), h.Workdir)
		} else {
			s.add(kinds[0].line, join(path, "watch"), "needs paths")
		}
	}

	const sched = "every, cron and at"
	if onlyFor("timezone", periodic, sched) {
		tz := f.get("timezone")
		if s.decodeAt(tz, join(path, "timezone"), &t.Timezone) {
			loc, err := triggers.LoadLocation(t.Timezone)
			if err != nil || t.Timezone == "" {
				s.errorf(tz, join(path, "timezone"), "unknown time zone %q (want an IANA name like Europe/Berlin, or UTC)", t.Timezone)
			} else {
				t.Location = loc
			}
		}
	}
	if periodic && t.Location == nil {
		t.Location = time.Local
		if aq && t.Kind == engine.TriggerCron {
			// agent-queue's schedules are in UTC.
			t.Location, t.Timezone = time.UTC, "UTC"
		}
	}
	if t.Kind == engine.TriggerAt && kindNode != nil {
		t.At = s.atTime(kindNode, kindPath, t.Location)
	}
	if onlyFor("jitter", periodic, sched) {
		j := f.get("jitter")
		if s.decodeAt(j, join(path, "jitter"), &t.Jitter) {
			nonNegative(s, j, join(path, "jitter"), t.Jitter)
			if t.Kind == engine.TriggerEvery && t.Every > 0 && t.Jitter >= t.Every {
				s.errorf(j, join(path, "jitter"), "must be less than the interval %s (got %s)", human.Exact(t.Every), written(j, t.Jitter))
			}
		}
	}
	if onlyFor("on_missed", periodic, sched) {
		m := f.get("on_missed")
		if s.decodeAt(m, join(path, "on_missed"), &t.OnMissed) {
			switch t.OnMissed {
			case engine.MissedSkip, engine.MissedLatest, engine.MissedAll:
			default:
				s.errorf(m, join(path, "on_missed"), "must be skip, latest or all (got %q)", t.OnMissed)
			}
		}
	}
	if onlyFor("max_catchup", periodic, sched) {
		m := f.get("max_catchup")
		if s.decodeAt(m, join(path, "max_catchup"), &t.MaxCatchup) && t.MaxCatchup < 1 {
			s.errorf(m, join(path, "max_catchup"), "must be >= 1 (got %d); leave it out for the daemon default", t.MaxCatchup)
		}
	}
	if !periodic {
		t.OnMissed = ""
	}
	if onlyFor("where", t.Kind == engine.TriggerEvent, "event") {
		w := f.get("where")
		if w.Kind == yaml.ScalarNode && w.Tag == "!!str" {
			// A condition over the event: event.env == "prod" && ...
			c, err := engine.CompileCondition(w.Value, nil, 0)
			if err != nil {
				s.errorf(w, join(path, "where"), "%s", err)
			}
			t.WhereIf = c
		} else if w.Kind != yaml.MappingNode {
			s.errorf(w, join(path, "where"), "expected a mapping of payload field: value, or a condition like event.env == \"prod\", got %s", describe(w))
		} else if m, _ := s.anyValue(w, join(path, "where")).(map[string]any); m != nil {
			if err := triggers.ValidateWhere(m); err != nil {
				s.errorf(w, join(path, "where"), "%s", err)
			} else {
				t.Where = m
			}
		}
	}

	if periodic && s.count() == before {
		sc, err := engine.CompileSchedule(t)
		if err != nil {
			s.errorf(kindNode, kindPath, "%s", err)
			return
		}
		t.Schedule = sc
	}
	return interval
}

// watch decodes a watch spec; relative paths resolve against workdir.
func (s *state) watch(n *yaml.Node, path, workdir string) *engine.WatchSpec {
	w := &engine.WatchSpec{Debounce: DefaultDebounce}
	if n.Kind != yaml.MappingNode {
		s.errorf(n, path, "expected a mapping like {paths: [docs]}, got %s", describe(n))
		return w
	}
	f := s.fields(n, path, watchKeys, nil)
	// agent-queue's base_dir: the directory relative paths are under
	// (itself relative to the workdir). Its project_id has nothing to
	// scope here: a watch fires only its own hook.
	base := workdir
	var baseDir, project string
	if b, ok := f.decode("base_dir", &baseDir); ok {
		switch {
		case baseDir == "":
			s.errorf(b, join(path, "base_dir"), "must not be empty (leave it out for the workdir)")
		case filepath.IsAbs(baseDir):
			base = filepath.Clean(baseDir)
		default:
			base = filepath.Join(workdir, baseDir)
		}
	}
	f.decode("project_id", &project)
	if p, ok := f.decode("paths", &w.Paths); ok {
		if len(w.Paths) == 0 {
			s.errorf(p, join(path, "paths"), "must list at least one path")
		}
		for i, dir := range w.Paths {
			switch {
			case dir == "":
				s.errorf(p.Content[i], index(join(path, "paths"), i), "must not be empty")
			case filepath.IsAbs(dir):
				w.Paths[i] = filepath.Clean(dir)
			default:
				w.Paths[i] = filepath.Join(base, dir)
			}
		}
	} else if f.get("paths") == nil {
		s.add(f.keyLine("paths"), join(path, "paths"), "required: the files or folders to watch")
	}
	f.decode("recursive", &w.Recursive)
	if _, ok := f.decode("extensions", &w.Extensions); ok {
		for i, e := range w.Extensions {
			if e != "" && !strings.HasPrefix(e, ".") {
				w.Extensions[i] = "." + e
			}
		}
	}
	f.decode("include", &w.Include)
	f.decode("ignore", &w.Ignore)
	for _, key := range []string{"include", "ignore", "extensions"} {
		if l := f.get(key); l != nil && l.Kind == yaml.SequenceNode {
			for i, c := range l.Content {
				if c = resolve(c); c.Kind == yaml.ScalarNode && c.Value == "" {
					s.errorf(c, index(join(path, key), i), "must not be empty")
				} else if c.Kind == yaml.ScalarNode && key != "extensions" {
					if err := triggers.ValidateGlob(c.Value); err != nil {
						s.errorf(c, index(join(path, key), i), "%s", err)
					}
				}
			}
		}
	}
	if d, ok := f.decode("debounce", &w.Debounce); ok {
		nonNegative(s, d, join(path, "debounce"), w.Debounce)
	}
	if m, ok := f.decode("max_wait", &w.MaxWait); ok {
		nonNegative(s, m, join(path, "max_wait"), w.MaxWait)
		if w.MaxWait > 0 && w.MaxWait < w.Debounce {
			s.errorf(m, join(path, "max_wait"), "must be at least debounce %s (got %s)", human.Exact(w.Debounce), written(m, w.MaxWait))
		}
	}
	f.decode("poll", &w.Poll)
	f.decode("scan_on_start", &w.ScanOnStart)
	f.decode("include_hidden", &w.IncludeHidden)
	return w
}
