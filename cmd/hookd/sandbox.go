package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/sandbox"
)

// installSandbox makes the sandbox every process of a hook starts in, as
// hookd.yaml's sandbox: says, before any process starts (hookd serve,
// and fire, emit and render, which run steps themselves), and logs
// which containment it gives: each line of its status at info, all of
// them at warn when hooks that take untrusted input cannot run (or
// sandbox: off runs them unconfined). A reload of hookd.yaml does not
// change it: sandbox: takes effect at the next start.
func installSandbox(d *config.Daemon, log *slog.Logger) sandbox.Status {
	sb := sandbox.New(sandbox.Options{Off: d.SandboxOff})
	sandbox.SetDefault(sb)
	st := sb.Status()
	level := slog.LevelInfo
	if !st.Contained() {
		level = slog.LevelWarn
		if st.Off {
			log.Warn("sandbox: off in hookd.yaml: every process of a hook runs with hookd's own rights, hooks that take untrusted input included")
		} else {
			log.Warn("sandbox: containment unavailable: hooks that start processes from untrusted input (event and watch triggers, " +
				"run_command and MCP tools) are refused and recorded skipped (sandbox_unavailable); set sandbox: off in hookd.yaml to run them unconfined")
		}
	}
	for _, l := range st.Lines() {
		log.Log(context.Background(), level, "sandbox: "+l)
	}
	return st
}

// sandboxReport is which containment the daemon's processes get, in
// /v1/status and `hookd status`.
type sandboxReport struct {
	// Contained: files and the network can be confined, so hooks that
	// take untrusted input run.
	Contained bool     `json:"contained"`
	Off       bool     `json:"off"`          // hookd.yaml sets sandbox: off
	Landlock  int      `json:"landlock_abi"` // 0: none
	FilesOK   bool     `json:"files_ok"`
	NetworkOK bool     `json:"network_ok"`
	CgroupsOK bool     `json:"cgroups_ok"`
	LimitsOK  bool     `json:"limits_ok"`
	Lines     []string `json:"lines"` // as the start-up log says them
	// Hooks are the hooks the sandbox cannot serve as they ask, with
	// what it cannot give (engine.HookStatus.Sandbox).
	Hooks map[string]string `json:"hooks,omitempty"`
}

func newSandboxReport(st sandbox.Status) *sandboxReport {
	return &sandboxReport{Contained: st.Contained(), Off: st.Off, Landlock: st.Landlock, FilesOK: st.FilesOK,
		NetworkOK: st.NetworkOK, CgroupsOK: st.CgroupsOK, LimitsOK: st.LimitsOK, Lines: st.Lines()}
}

// writeSandbox writes the sandbox's lines under a heading that says
// whether hooks that take untrusted input run.
func writeSandbox(w io.Writer, r *sandboxReport) {
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
