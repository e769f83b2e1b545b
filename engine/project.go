package engine

// inProject is agent-queue's project scoping of event hooks: a hook with a
// project_id does not fire for an event whose payload names another
// project; an event without a project_id fires it.
func inProject(h *Hook, data map[string]any) bool {
	if h.Project == "" {
		return true
	}
	p, ok := data["project_id"].(string)
	return !ok || p == h.Project
}
