package daemon

import (
	"context"
	"log/slog"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/sandbox"
)

// InstallSandbox makes the sandbox every process of a hook starts in, as
// hookd.yaml's sandbox: says, before any process starts (hookd serve,
// and fire, emit and render, which run steps themselves), and logs
// which containment it gives: each line of its status at info, all of
// them at warn when hooks that take untrusted input cannot run (or
// sandbox: off runs them unconfined). A reload of hookd.yaml does not
// change it: sandbox: takes effect at the next start. The sandbox is the
// process's (sandbox.Install): daemons built in one process share it,
// and one whose sandbox: differs from it is an error.
func InstallSandbox(d *config.Daemon, log *slog.Logger) (sandbox.Status, error) {
	sb, err := sandbox.Install(sandbox.Options{Off: d.SandboxOff})
	if err != nil {
		return sandbox.Status{}, err
	}
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
	return st, nil
}
