package steps

import (
	"context"
	"slices"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestDeclaredFields: every step kind declares the fields of its results,
// and a result has exactly those (plus the common ones), also when the
// step fails, so a placeholder checked at load against the declaration
// resolves at run time.
func TestDeclaredFields(t *testing.T) {
	srcs := map[string]string{
		"shell":         "command: 'true'",
		"run_tests":     "command: 'true'",
		"read_file":     "path: missing.txt",
		"list_files":    "path: .",
		"http":          "url: http://127.0.0.1:1/",
		"git_diff":      "{}",
		"file_diff":     "path: a.txt",
		"git_log":       "{}",
		"db_query":      "query: recent_runs",
		"emit":          "event_type: a",
		"create_task":   "{}",
		"memory_search": "query: flaky",
	}
	for _, kind := range engine.StepKinds() {
		t.Run(kind, func(t *testing.T) {
			k, _ := engine.LookupStep(kind)
			declared := k.ResultFields()
			if declared == nil {
				t.Fatalf("step kind %s declares no result fields", kind)
			}
			src, ok := srcs[kind]
			if !ok {
				t.Fatalf("no test source for step kind %s", kind)
			}
			s := mustStep(t, kind, src, 0)
			env := stepEnv(t, nil)
			env.Env = gitEnv(t) // the git kinds fail: the workdir is no repository
			res, _ := s.Run(context.Background(), env)
			if res == nil {
				t.Fatal("no result")
			}
			for _, f := range declared {
				if _, ok := res.Field(f); !ok {
					t.Errorf("declared field %s missing (error %q)", f, res.Error)
				}
			}
			for f := range res.Fields {
				if !slices.Contains(declared, f) {
					t.Errorf("result field %s is not declared (declared: %v)", f, declared)
				}
			}
		})
	}
}
