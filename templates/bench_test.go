package templates

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// BenchmarkRender50KB renders a prompt from 50 KB of gathered context:
// five steps of 10 KB of output each (test logs, a diff, a listing), an
// event and hookd's own values. The target is <= 1 ms per render.
//
//	go test ./templates -run '^$' -bench Render50KB -benchmem
func BenchmarkRender50KB(b *testing.B) {
	const perStep = 10 << 10
	scope := &engine.Scope{
		Hook: "bench", RunID: "01JBENCH", Trigger: "schedule", Now: t0, LastRunTime: last,
		Event:     map[string]any{"repo": map[string]any{"name": "hookd", "ref": "main"}, "env": "prod"},
		StepNames: map[string]int{},
	}
	kinds := []string{"tests", "diff", "log", "files", "lint"}
	for i, k := range kinds {
		var out strings.Builder
		for n := 0; out.Len() < perStep; n++ {
			fmt.Fprintf(&out, "%s line %05d: --- FAIL: TestSomething/case_%d (0.01s) \"quoted\" <tag> `code`\n", k, n, n)
		}
		s := out.String()[:perStep]
		scope.Steps = append(scope.Steps, &engine.StepResult{Index: i, Name: k, Type: "shell", Output: s,
			ExitCode: new(1), Fields: map[string]any{"stdout": s}})
		scope.StepNames[k] = i
	}
	h := &engine.Hook{Name: "bench", Description: "benchmark", Workdir: "/srv/project", Prompt: `Tests failed in {{event.repo.name}} ({{event.repo.ref}}, {{event.env}}) at {{now}}, exit {{steps.tests.exit_code}}:
{{steps.tests.stdout}}
Diff since {{last_run_time}}:
{{step_1}}
Log: {{steps.log.stdout}}
Files: {{steps.files.stdout}}
Lint: {{step_4}}
Summarise what broke and why, for {{hook}} run {{run}}.
`}
	r := New(Options{})
	var size int
	b.SetBytes(5 * perStep)
	b.ReportAllocs()
	for b.Loop() {
		p, err := r.RenderPrompt(h, scope)
		if err != nil {
			b.Fatal(err)
		}
		size = len(p)
	}
	b.ReportMetric(float64(size), "prompt-bytes")
}
