package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookd/hookd/engine"
)

// tool is a built-in tool: a name, a description, a JSON schema and a
// function of the decoded arguments.
type tool[A any] struct {
	name, desc string
	schema     json.RawMessage
	run        func(ctx context.Context, env *engine.ToolEnv, args *A) (string, error)
}

func (t *tool[A]) Name() string            { return t.name }
func (t *tool[A]) Description() string     { return t.desc }
func (t *tool[A]) Schema() json.RawMessage { return t.schema }

// Call decodes the arguments strictly into A and runs the tool.
func (t *tool[A]) Call(ctx context.Context, env *engine.ToolEnv, raw json.RawMessage) (string, error) {
	var args A
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&args); err != nil {
			return "", fmt.Errorf("decode arguments: %w", err)
		}
	}
	return t.run(ctx, env, &args)
}

// register adds a built-in tool; the schema must be valid JSON.
func register[A any](name, desc, schema string, run func(context.Context, *engine.ToolEnv, *A) (string, error)) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(schema)); err != nil {
		panic("tools: schema of " + name + " is not valid JSON: " + err.Error())
	}
	engine.RegisterTool(&tool[A]{name: name, desc: desc, schema: buf.Bytes(), run: run})
}
