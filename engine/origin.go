package engine

import "strings"

// toolOriginPrefix starts the Run.Trigger and the Event.Source of what a
// model's tool call started: "tool:HOOK" names the hook whose model made
// the call.
const toolOriginPrefix = "tool:"

// ToolOrigin is the trigger or event source of something the model of
// hook started with a tool call.
func ToolOrigin(hook string) string { return toolOriginPrefix + hook }

// FromTool reports whether a run's trigger or an event's source says that
// a model's tool call started it, and the hook whose model made the call.
// Such data is as trustworthy as the model, and so as the data the model
// read: hookd treats it as attacker-chosen.
func FromTool(origin string) (hook string, ok bool) {
	return strings.CutPrefix(origin, toolOriginPrefix)
}
