package api

import (
	"slices"
	"strings"
)

// EnvNames is the answer of GET /v1/env: the names of the variables set
// in the daemon's environment, sorted — never their values. A variable
// set to "" is left out: hookd reads it as unset (a model, its server).
// hookd validate checks what hooks need of the environment (a model, its
// key) against them.
type EnvNames struct {
	Names []string `json:"names"`
}

// EnvNamesOf returns the names of environ's variables (KEY=VALUE, as
// os.Environ gives them) set to something, sorted and without repeats.
func EnvNamesOf(environ []string) EnvNames {
	names := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k != "" && v != "" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return EnvNames{Names: slices.Compact(names)}
}

// Has reports whether name is among the names.
func (e EnvNames) Has(name string) bool {
	_, ok := slices.BinarySearch(e.Names, name)
	return ok
}
