package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
)

func init() {
	register("list_runs",
		"List hookd's recent runs, newest first: id, hook, status, trigger, start time, duration and why it ended.",
		`{"type":"object","properties":{
			"hook":{"type":"string","description":"whose runs: this hook's by default, or another one this hook's file lets it read"},
			"status":{"enum":["queued","running","completed","failed","skipped","dropped","cancelled","interrupted"]},
			"limit":{"type":"integer","minimum":1,"maximum":100,"description":"default 20"}
		},"additionalProperties":false}`,
		listRuns)
	register("get_run",
		"Read one run record by id (from list_runs): its steps and their outputs, prompt, response, "+
			"tokens and error, as JSON.",
		`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`,
		getRun)
	register("search_runs",
		"Search what earlier runs recorded (their event, step outputs, prompt and answer) for words: the best "+
			"matching runs, with id, hook, status, time, a snippet and a score. Read one in full with get_run.",
		`{"type":"object","properties":{
			"query":{"type":"string","description":"words to look for"},
			"hook":{"type":"string","description":"whose runs: this hook's by default (every hook's when its file allows all), or another one this hook's file lets it read"},
			"limit":{"type":"integer","minimum":1,"maximum":20,"description":"default 5"}
		},"required":["query"],"additionalProperties":false}`,
		searchRuns)
}

type searchRunsArgs struct {
	Query string `json:"query"`
	Hook  string `json:"hook"`
	Limit int    `json:"limit"`
}

func searchRuns(ctx context.Context, env *engine.ToolEnv, a *searchRunsArgs) (string, error) {
	s := env.Records
	if s == nil {
		return "", errors.New("hookd's run history has no search index here")
	}
	hook, err := runsOf(env, a.Hook)
	if err != nil {
		return "", err
	}
	hits, err := s.SearchRuns(ctx, engine.SearchQuery{Text: a.Query, Hook: hook, Limit: min(max(a.Limit, 0), 20)})
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return "(no runs match)", nil
	}
	var b strings.Builder
	b.WriteString("id\thook\tstatus\tfinished\tscore\tsnippet")
	for _, h := range hits {
		fmt.Fprintf(&b, "\n%s\t%s\t%s\t%s\t%.2f\t%s", h.RunID, h.Hook, h.Status, h.Time.UTC().Format(time.RFC3339),
			h.Score, strings.Join(strings.Fields(h.Snippet), " "))
	}
	return b.String(), nil
}

type listRunsArgs struct {
	Hook   string `json:"hook"`
	Status string `json:"status"`
	Limit  int    `json:"limit"`
}

func listRuns(ctx context.Context, env *engine.ToolEnv, a *listRunsArgs) (string, error) {
	if env.Records == nil {
		return "", errors.New("hookd's records are not readable from this run")
	}
	if a.Limit <= 0 {
		a.Limit = 20
	}
	hook, err := runsOf(env, a.Hook)
	if err != nil {
		return "", err
	}
	runs, err := env.Records.ListRuns(ctx, engine.RunFilter{Hook: hook, Status: engine.Status(a.Status), Limit: a.Limit})
	if err != nil {
		return "", err
	}
	if len(runs) == 0 {
		return "(no runs)", nil
	}
	var b strings.Builder
	b.WriteString("id\thook\tstatus\ttrigger\tstarted\tduration\twhy")
	for _, r := range runs {
		started := "-"
		if !r.StartedAt.IsZero() {
			started = r.StartedAt.UTC().Format(time.RFC3339)
		}
		dur := "-"
		if d := r.Duration(); d > 0 {
			dur = d.Round(time.Millisecond).String()
		}
		why := engine.Clip(strings.TrimSpace(r.Reason+" "+r.Error), 200)
		fmt.Fprintf(&b, "\n%s\t%s\t%s\t%s\t%s\t%s\t%s", r.ID, r.Hook, r.Status, r.Trigger, started, dur,
			strings.Join(strings.Fields(why), " "))
	}
	return b.String(), nil
}

type getRunArgs struct {
	ID string `json:"id"`
}

func getRun(ctx context.Context, env *engine.ToolEnv, a *getRunArgs) (string, error) {
	if env.Records == nil {
		return "", errors.New("hookd's records are not readable from this run")
	}
	r, err := env.Records.GetRun(ctx, a.ID)
	if err == nil && (env.Hook == nil || !env.Hook.MayReadRunsOf(r.Hook)) {
		err = engine.ErrNotFound // a run this hook may not read is one it cannot tell exists
	}
	if errors.Is(err, engine.ErrNotFound) {
		return "", fmt.Errorf("no run %s (list_runs shows the ids)", a.ID)
	}
	if err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// runsOf is the hook whose runs a run-record tool reads when the model
// asks for hook's: the calling hook's own when it names none (every hook's
// when its file allows all, ""), and another only when the file names it
// (Hook.MayReadRunsOf). The model cannot widen what the file grants.
func runsOf(env *engine.ToolEnv, hook string) (string, error) {
	h := env.Hook
	switch {
	case h == nil:
		return "", errors.New("hookd's records are not readable from this run")
	case hook == "" && h.MayReadRunsOf(engine.AllRunHooks):
		return "", nil
	case hook == "":
		return h.Name, nil
	case !h.MayReadRunsOf(hook):
		return "", fmt.Errorf("hook %q is not one whose runs this hook may read (%s)", hook, runTargets(h))
	}
	return hook, nil
}

// runTargets says which hooks' runs h may read.
func runTargets(h *engine.Hook) string {
	if len(h.RunHooks) == 0 {
		return "its own only; its file may name others: `- search_runs: {hooks: [NAME]}`"
	}
	return "it may read: " + strings.Join(append([]string{h.Name}, h.RunHooks...), ", ")
}
