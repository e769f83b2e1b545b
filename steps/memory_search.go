package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/human"
)

func init() {
	engine.RegisterStep("memory_search", engine.DeclaredKind{Build: newMemorySearch,
		Fields: []string{"hits", "count", "query"}})
}

// DefaultMemoryLimit is how many matches memory_search returns by default.
const DefaultMemoryLimit = 5

type memoryConfig struct {
	Query     string `yaml:"query"`
	Hook      string `yaml:"hook"`
	Limit     *int   `yaml:"limit"`
	TopK      *int   `yaml:"top_k"`      // agent-queue's name of limit
	Since     string `yaml:"since"`      // a duration back from now (30d, 12h)
	ProjectID string `yaml:"project_id"` // agent-queue's; accepted and ignored
}

// memorySearch searches what earlier runs recorded (SearchRuns on the
// store): agent-queue's memory_search over hookd's run history.
type memorySearch struct {
	def   *engine.StepDef
	query string
	hook  string // "" is this hook; "*" every hook
	limit int
	since time.Duration
}

func newMemorySearch(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c memoryConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	if strings.TrimSpace(c.Query) == "" {
		return nil, fieldErr(cfg, "query", "required: what to search for, e.g. query: \"{{event.service}} outage\"")
	}
	if _, err := engine.ParsePlaceholders(c.Query); err != nil {
		return nil, fieldErr(cfg, "query", "%v", err)
	}
	s := &memorySearch{def: def, query: c.Query, hook: c.Hook, limit: DefaultMemoryLimit}
	// Given, 0 is out of range like any other bad count, not the default.
	field := "limit"
	switch {
	case c.Limit != nil && c.TopK != nil:
		return nil, fieldErr(cfg, "top_k", "top_k is agent-queue's name of limit, which is also given; keep one")
	case c.TopK != nil:
		s.limit, field = *c.TopK, "top_k"
	case c.Limit != nil:
		s.limit = *c.Limit
	}
	if s.limit < 1 || s.limit > 100 {
		return nil, fieldErr(cfg, field, "must be from 1 to 100 (got %d)", s.limit)
	}
	if c.Since != "" {
		d, err := human.ParseAge(c.Since)
		if err != nil || d <= 0 {
			return nil, fieldErr(cfg, "since", "must be a duration back from now, like 30d or 12h (got %q)", c.Since)
		}
		s.since = d
	}
	return s, nil
}

// Templates returns the strings of the step that may hold placeholders.
func (s *memorySearch) Templates() []string { return []string{s.query} }

// Run searches the run history.
func (s *memorySearch) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.def, map[string]any{"hits": []any{}, "query": ""})
	res.Count = new(0)
	q, err := engine.Expand(s.query, scopeOf(env), nil)
	if err != nil {
		return fail(res, fmt.Errorf("query: %w", err))
	}
	res.Fields["query"] = q
	searcher := env.Records
	if searcher == nil {
		return fail(res, errors.New("this hookd's store has no search index"))
	}
	sq := engine.SearchQuery{Text: q, Hook: s.hook, Limit: s.limit}
	switch s.hook {
	case "":
		if env.Hook != nil {
			sq.Hook = env.Hook.Name
		}
	case "*":
		sq.Hook = ""
	}
	if s.since > 0 {
		sq.Since = env.Now.Add(-s.since)
	}
	hits, err := searcher.SearchRuns(ctx, sq)
	if err != nil {
		return fail(res, err)
	}
	var b strings.Builder
	list := make([]any, 0, len(hits))
	for i, h := range hits {
		if h.RunID == env.RunID {
			continue
		}
		fmt.Fprintf(&b, "%d. run %s (%s, %s, %s, score %.2f)\n   %s\n", i+1, h.RunID, h.Hook, h.Status,
			h.Time.UTC().Format(time.RFC3339), h.Score, strings.Join(strings.Fields(h.Snippet), " "))
		list = append(list, map[string]any{"run_id": h.RunID, "hook": h.Hook, "status": string(h.Status),
			"time": h.Time.UTC().Format(time.RFC3339), "snippet": h.Snippet, "score": h.Score})
	}
	res.Output = b.String()
	res.Fields["hits"] = list
	res.Count = new(len(list))
	return done(res)
}
