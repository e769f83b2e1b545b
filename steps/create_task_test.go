package steps

import (
	"testing"

	"github.com/hookd/hookd/engine"
)

func TestCreateTaskNewErrors(t *testing.T) {
	newErrTests(t, "create_task", []struct{ name, src, want string }{
		{"empty title", `title_template: "  "`, "title_template: must not be empty"},
		{"bad placeholder", `title_template: "Fix {{event.x"`, "title: unclosed placeholder"},
		{"wrong type", `priority: high`, "cannot unmarshal"},
		{"unknown field", `titel_template: x`, "titel_template"},
	})
}

// TestCreateTask: agent-queue's create_task publishes task.create with
// the task's fields, placeholders expanded, agent-queue's defaults, the
// hook's project when none is given, and a task_id.
func TestCreateTask(t *testing.T) {
	var sink []emitted
	s := mustStep(t, "create_task", `title_template: "Fix {{event.test}}"
description_template: "Failed: {{step_0}}"
branch_name: "fix/{{event.test}}"
context_entries:
  - {type: text, label: log, content: "{{step_0}}"}
`, 1)
	env := emitEnv(t, map[string]any{"test": "TestParse"}, &sink, &engine.Emitted{Runs: []*engine.Run{{ID: "r1"}}}, nil)
	env.Hook = &engine.Hook{Name: "triage", Project: "webapp"}
	env.Scope.Steps = []*engine.StepResult{{Index: 0, Output: "boom"}}
	res, err := runStep(t, s, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink) != 1 || sink[0].typ != "task.create" {
		t.Fatalf("emitted %+v", sink)
	}
	d := sink[0].data
	entry, _ := d["context_entries"].([]any)
	if d["title"] != "Fix TestParse" || d["description"] != "Failed: boom" || d["branch_name"] != "fix/TestParse" ||
		d["project_id"] != "webapp" || d["priority"] != 100 || d["parent_task_id"] != nil || d["profile_id"] != nil ||
		len(entry) != 1 || entry[0].(map[string]any)["content"] != "boom" || d["task_id"] == "" {
		t.Errorf("data %v", d)
	}
	if res.Fields["task_id"] != d["task_id"] || res.Fields["created"] != true || res.Fields["event_type"] != "task.create" ||
		*res.Count != 1 {
		t.Errorf("result %+v", res.Fields)
	}

	// Defaults: agent-queue's title and priority; a project given wins.
	sink = nil
	s = mustStep(t, "create_task", `project_id: other
priority: 5
`, 0)
	env = emitEnv(t, nil, &sink, nil, nil)
	env.Hook = &engine.Hook{Name: "triage", Project: "webapp"}
	if _, err := runStep(t, s, env); err != nil {
		t.Fatal(err)
	}
	if d := sink[0].data; d["title"] != "Hook-created task" || d["priority"] != 5 || d["project_id"] != "other" {
		t.Errorf("defaults: %v", d)
	}
}
