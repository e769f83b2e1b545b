package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/sandbox"
)

// writeSandbox writes the sandbox's lines under a heading that says
// whether hooks that take untrusted input run.
func writeSandbox(w io.Writer, r *api.SandboxReport) {
	switch {
	case r == nil:
		return
	case r.Off:
		fmt.Fprintln(w, "\nsandbox: OFF (hookd.yaml): every process of a hook runs with hookd's own rights")
	case r.Contained:
		fmt.Fprintln(w, "\nsandbox: contained")
	default:
		fmt.Fprintln(w, "\nsandbox: UNAVAILABLE: hooks that start processes from untrusted input are refused (sandbox_unavailable)")
	}
	for _, l := range r.Lines {
		if !r.Off {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	for _, h := range sortedKeys(r.Hooks) {
		fmt.Fprintf(w, "  hook %s: %s\n", h, r.Hooks[h])
	}
}

// warnings collects the warnings of a check of hooks.d (validate).
type warnings struct {
	mu   sync.Mutex
	list []*config.Error
}

// collect sets a check's options to report warnings to w, with the
// sandbox this machine gives as hookd.yaml asks for (built to ask, then
// closed: it starts nothing).
func (w *warnings) collect(d *config.Daemon) func(*config.Options) {
	sb := sandbox.New(sandbox.Options{Off: d.SandboxOff})
	st := sb.Status()
	sb.Close()
	return func(o *config.Options) {
		o.Sandbox = &st
		o.Warn = func(e *config.Error) {
			w.mu.Lock()
			w.list = append(w.list, e)
			w.mu.Unlock()
		}
	}
}

// sorted returns the warnings by file and line.
func (w *warnings) sorted() []*config.Error {
	w.mu.Lock()
	defer w.mu.Unlock()
	slices.SortStableFunc(w.list, func(a, b *config.Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return w.list
}
