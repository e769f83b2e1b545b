package steps

import (
	"context"
	"strings"

	"github.com/hookd/hookd/engine"
)

func init() {
	engine.RegisterStep("create_task", engine.DeclaredKind{Build: newCreateTask,
		Fields: []string{"event_type", "runs", "refused", "count", "data", "task_id", "created"}})
}

// TaskCreateEvent is the event a create_task step publishes.
const TaskCreateEvent = "task.create"

// createTaskConfig is agent-queue's create_task step.
type createTaskConfig struct {
	Title                *string          `yaml:"title_template"`
	Description          string           `yaml:"description_template"`
	ProjectID            string           `yaml:"project_id"`
	ParentTaskID         *string          `yaml:"parent_task_id"`
	ProfileID            *string          `yaml:"profile_id"`
	PreferredWorkspaceID *string          `yaml:"preferred_workspace_id"`
	BranchName           *string          `yaml:"branch_name"`
	Priority             *int             `yaml:"priority"`
	ContextEntries       []map[string]any `yaml:"context_entries"`
}

// createTask is agent-queue's create_task step. hookd has no task queue:
// the step publishes a task.create event with the task's fields (an emit
// step of that type), and the hook (or the program) that handles
// task.create creates the task. The fields' placeholders are expanded as
// an emit step's data.
type createTask struct {
	def  *engine.StepDef
	data map[string]any
}

func newCreateTask(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c createTaskConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	title := "Hook-created task" // agent-queue's default
	if c.Title != nil {
		title = *c.Title
	}
	if strings.TrimSpace(title) == "" {
		return nil, fieldErr(cfg, "title_template", "must not be empty (leave it out for %q)", "Hook-created task")
	}
	priority := 100 // agent-queue's default
	if c.Priority != nil {
		priority = *c.Priority
	}
	entries := make([]any, len(c.ContextEntries))
	for i, e := range c.ContextEntries {
		entries[i] = e
	}
	opt := func(p *string) any {
		if p == nil {
			return nil
		}
		return *p
	}
	data := map[string]any{
		"title": title, "description": c.Description, "project_id": c.ProjectID,
		"parent_task_id": opt(c.ParentTaskID), "profile_id": opt(c.ProfileID),
		"preferred_workspace_id": opt(c.PreferredWorkspaceID), "branch_name": opt(c.BranchName),
		"priority": priority, "context_entries": entries,
	}
	var bad error
	walkStrings(data, "data", func(path, s string) {
		if _, err := engine.ParsePlaceholders(s); err != nil && bad == nil {
			bad = fieldErr(cfg, strings.TrimPrefix(path, "data."), "%v", err)
		}
	})
	if bad != nil {
		return nil, bad
	}
	return &createTask{def: def, data: data}, nil
}

// Templates returns the strings of the step that may hold placeholders.
func (s *createTask) Templates() []string {
	var out []string
	walkStrings(s.data, "data", func(_, str string) { out = append(out, str) })
	return out
}

// Run publishes task.create with the task's fields, its project_id
// defaulting to the hook's, and a task_id hookd makes for it.
func (s *createTask) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.def, map[string]any{"event_type": TaskCreateEvent, "runs": []any{}, "refused": []any{}, "data": map[string]any{},
		"task_id": "", "created": false})
	res.Count = new(0)
	v, err := expandData(s.data, "data", scopeOf(env), true)
	if err != nil {
		return fail(res, err)
	}
	data := v.(map[string]any)
	if data["project_id"] == "" && env.Hook != nil {
		data["project_id"] = env.Hook.Project
	}
	id := engine.NewID()
	data["task_id"] = id
	if _, err := publish(ctx, env, res, TaskCreateEvent, data); err != nil {
		return res, err
	}
	res.Fields["task_id"], res.Fields["created"] = id, true
	return done(res)
}
