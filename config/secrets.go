package config

import (
	"slices"
	"strings"

	"github.com/hookd/hookd/engine"
	"gopkg.in/yaml.v3"
)

// A hook's secrets: (engine.Hook.Secrets) are redacted everywhere in its
// runs, but each reaches only the processes of the steps and tools that
// name it in their own secrets:
//
//	secrets: [GITHUB_TOKEN, DEPLOY_KEY]
//	steps:
//	  - type: shell
//	    command: gh issue list
//	    secrets: [GITHUB_TOKEN]
//	tools:
//	  - run_command: {secrets: [DEPLOY_KEY]}
//
// A step or tool may only name the hook's secrets, and each of those must
// be named by a step or a tool.

// secretNames decodes the secrets: of a step or tool, at path: names of
// the hook's secrets (hook).
func (s *state) secretNames(n *yaml.Node, path string, hook []string, dst *[]string) {
	if !s.decodeAt(n, path, dst) {
		return
	}
	for i, name := range *dst {
		at := index(path, i)
		switch {
		case !envName.MatchString(name):
			s.errorf(n.Content[i], at, "%q is not an environment variable name", name)
		case !slices.Contains(hook, name):
			s.errorf(n.Content[i], at, "%s is not one of the hook's secrets; list it in the hook's secrets: too "+
				"(secrets: [%s]), which hookd redacts everywhere", name, strings.Join(append(slices.Clone(hook), name), ", "))
		case slices.Contains((*dst)[:i], name):
			s.errorf(n.Content[i], at, "%s is listed twice", name)
		}
	}
}

// stepSecretsAllowed refuses secrets: on a step whose kind starts no
// process: a secret reaches nothing else.
func (s *state) stepSecretsAllowed(n *yaml.Node, path string, def *engine.StepDef, kind engine.StepKind) {
	if kind.Processes() != engine.ProcessesNone {
		return
	}
	s.errorf(n, path, "a %s step starts no process, so no secret reaches it (secrets go to the processes of "+
		"the steps and tools that name them); remove secrets: here", def.Type)
}

// unnamedSecrets reports each of the hook's secrets (at n, its secrets:)
// that no step or tool names: it would reach no process.
func (s *state) unnamedSecrets(n *yaml.Node, h *engine.Hook) {
	if n == nil || n.Kind != yaml.SequenceNode || len(n.Content) != len(h.Secrets) {
		return
	}
	for i, name := range h.Secrets {
		if !envName.MatchString(name) || secretNamed(h, name) {
			continue
		}
		s.errorf(n.Content[i], index("secrets", i), "%s is named by no step or tool; add `secrets: [%s]` "+
			"to the step that needs it (or `- run_command: {secrets: [%s]}` to tools:), or remove it", name, name, name)
	}
}

// secretNamed reports whether a step or tool of h names the secret name.
func secretNamed(h *engine.Hook, name string) bool {
	for _, d := range h.Steps {
		if slices.Contains(d.Secrets, name) {
			return true
		}
	}
	for _, names := range h.ToolSecrets {
		if slices.Contains(names, name) {
			return true
		}
	}
	return false
}

// toolSecrets decodes the settings of a tool that starts processes
// (run_command: {secrets: [...]}) at path.
func (s *state) toolSecrets(n *yaml.Node, path, tool string, h *engine.Hook) {
	tf := s.fields(n, path, []string{"secrets"}, nil)
	var names []string
	if v := tf.get("secrets"); v != nil {
		s.secretNames(v, join(path, "secrets"), h.Secrets, &names)
	}
	if _, dup := h.ToolSecrets[tool]; dup {
		s.errorf(n, path, "%s's settings are given twice; keep one entry", tool)
		return
	}
	if h.ToolSecrets == nil {
		h.ToolSecrets = map[string][]string{}
	}
	h.ToolSecrets[tool] = names
}
