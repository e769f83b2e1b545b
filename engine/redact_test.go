package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestRunRedactsCredentials: a run redacts its hook's model key and
// notify URL variables and hookd's credentials (Config.Credentials) from
// its record and from the events it publishes (stored and live), and its
// steps get the allowlisted environment (and their run's TRACEPARENT),
// without those variables.
func TestRunRedactsCredentials(t *testing.T) {
	t.Parallel()
	const out = "key sk-hookkey-0123 url https://hooks.example/T0/secret-path cred daemon-cred-0123"
	hook := withSteps(newHook("creds"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		_, err := env.Emit(ctx, "creds.out", map[string]any{"v": out})
		return &engine.StepResult{Output: out, Fields: map[string]any{"env": strings.Join(env.Env, "\n")}}, err
	}))
	hook.LLM.APIKeyEnv = "HOOK_KEY"
	hook.Notify = []engine.NotifyTarget{{URLEnv: "HOOK_URL", Format: engine.NotifyGeneric}}
	h := newHarness(t, []*engine.Hook{hook}, func(c *engine.Config) {
		c.Environ = []string{"HOOK_KEY=sk-hookkey-0123", "HOOK_URL=https://hooks.example/T0/secret-path",
			"DAEMON_CRED=daemon-cred-0123", "PATH=/usr/bin", "OTHER=x"}
		c.Credentials = []string{"DAEMON_CRED"}
	})
	defer h.stop()
	r := h.mustFire("creds")
	if _, err := h.eng.Wait(context.Background(), r.ID); err != nil {
		t.Fatal(err)
	}
	const want = "key [REDACTED:HOOK_KEY] url [REDACTED:HOOK_URL] cred [REDACTED:DAEMON_CRED]"
	stored := h.run(r.ID)
	if stored.Steps[0].Output != want || stored.Status != engine.StatusCompleted {
		t.Errorf("step output %q (%s %s)", stored.Steps[0].Output, stored.Status, stored.Steps[0].Error)
	}
	// The allowlist, and the run's span (which is no credential).
	if env, want := stored.Steps[0].Fields["env"], "PATH=/usr/bin\nTRACEPARENT="+string(stored.Span()); env != want {
		t.Errorf("step env %q, want the allowlist only and TRACEPARENT: %q", env, want)
	}
	db := h.dbAt()
	defer db.Close()
	evs, err := db.ListEvents(context.Background(), "creds.out", 10)
	if err != nil || len(evs) != 1 || evs[0].Data["v"] != want {
		t.Fatalf("stored events %v: %+v", err, evs)
	}
	if live := h.eventsOf("creds.out"); len(live) != 1 || live[0].Data["v"] != want {
		t.Errorf("live events %+v", live)
	}
}
