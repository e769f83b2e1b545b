package handlers

import (
	"sync"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
)

// Set keeps the command handlers of a hooks directory registered with a
// registry, by file, so that a reload replaces them.
type Set struct {
	reg     *engine.Registry
	environ []string

	mu     sync.Mutex
	byFile map[string][]func() // unsubscribe functions
}

// NewSet returns a set that registers with reg; environ is hookd's
// environment (nil: the process's own), of which the commands get the
// allowlisted part.
func NewSet(reg *engine.Registry, environ []string) *Set {
	return &Set{reg: reg, environ: environ, byFile: map[string][]func(){}}
}

// Apply registers hs and then removes what was registered before, so no
// call in between goes unguarded. The handlers of the files in keep (files
// that failed to load this time) stay as they were. Disabled handlers are
// not registered.
func (s *Set) Apply(hs []*config.Handler, keep map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := map[string][]func(){}
	for _, h := range hs {
		if !h.Enabled || keep[h.File] {
			continue
		}
		next[h.File] = append(next[h.File], s.reg.On(h.On, Command(h, s.environ), Options(h)))
	}
	for file, unsubs := range s.byFile {
		if keep[file] {
			next[file] = unsubs
			continue
		}
		for _, u := range unsubs {
			u()
		}
	}
	s.byFile = next
}
