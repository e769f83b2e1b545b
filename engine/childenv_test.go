package engine

import (
	"slices"
	"sync"
	"testing"
)

// TestHookChildEnvKeptAndRebuilt: a loaded hook's child environments are
// built once for all its runs (hookShared), and built again when a
// reload gives its entry another hook; ChildEnv follows what it comes
// from: hookd's environ (another slice or the same one changed), the
// hook's env, the secrets asked for or env_passthrough; a copy of a hook
// changed after it was copied gets its own.
func TestHookChildEnvKeptAndRebuilt(t *testing.T) {
	t.Parallel()
	environ := []string{"PATH=/usr/bin", "HOME=/home/a", "TOKEN=t1", "EXTRA=e1", "OTHER=o"}
	h := &Hook{Env: map[string]string{"SET": "s1"}}
	want := func(got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("ChildEnv = %q, want %q", got, want)
		}
	}
	s := &state{e: &Engine{cfg: Config{Environ: environ}}}
	ent := &entry{hook: h}
	first := s.shared(ent).envs.Base()
	want(first, "HOME=/home/a", "PATH=/usr/bin", "SET=s1")
	if again := s.shared(ent).envs.Base(); &again[0] != &first[0] {
		t.Errorf("a second run of the loaded hook built the environment again")
	}
	ent.hook = &Hook{Env: map[string]string{"SET": "reloaded"}}
	want(s.shared(ent).envs.Base(), "HOME=/home/a", "PATH=/usr/bin", "SET=reloaded")
	want(h.ChildEnv(slices.Clone(environ), nil), "HOME=/home/a", "PATH=/usr/bin", "SET=s1")
	if cap(first) != len(first) {
		t.Errorf("the shared environment has room to append in place (len %d, cap %d)", len(first), cap(first))
	}

	environ[0] = "PATH=/opt/bin" // the same slice, changed
	want(h.ChildEnv(environ, h.Secrets), "HOME=/home/a", "PATH=/opt/bin", "SET=s1")
	want(h.ChildEnv(append(slices.Clone(environ), "HOME=/home/b"), nil), "HOME=/home/b", "PATH=/opt/bin", "SET=s1")

	h.Env["SET"] = "s2"
	want(h.ChildEnv(environ, h.Secrets), "HOME=/home/a", "PATH=/opt/bin", "SET=s2")
	h.Secrets = []string{"TOKEN"}
	want(h.ChildEnv(environ, h.Secrets), "HOME=/home/a", "PATH=/opt/bin", "SET=s2", "TOKEN=t1")
	h.EnvPassthrough = []string{"EXTRA"}
	want(h.ChildEnv(environ, h.Secrets), "EXTRA=e1", "HOME=/home/a", "PATH=/opt/bin", "SET=s2", "TOKEN=t1")

	cp := &Hook{Env: map[string]string{"SET": "copy"}, Secrets: h.Secrets, EnvPassthrough: h.EnvPassthrough}
	want(cp.ChildEnv(environ, cp.Secrets), "EXTRA=e1", "HOME=/home/a", "PATH=/opt/bin", "SET=copy", "TOKEN=t1")
	want(h.ChildEnv(environ, h.Secrets), "EXTRA=e1", "HOME=/home/a", "PATH=/opt/bin", "SET=s2", "TOKEN=t1")
}

// TestHookChildEnvConcurrent: runs of one hook ask for its environment at
// the same time (run with -race).
func TestHookChildEnvConcurrent(t *testing.T) {
	t.Parallel()
	h := &Hook{Env: map[string]string{"SET": "x"}}
	environs := [][]string{{"PATH=/a"}, {"PATH=/b"}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				e := environs[(g+i)%2]
				if got := h.ChildEnv(e, nil); !slices.Equal(got, []string{e[0], "SET=x"}) {
					t.Errorf("ChildEnv(%q) = %q", e, got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestChildEnvsScopeSecrets: a secret of the hook reaches only the steps
// and tools that name it; the others get the hook's environment without
// any secret, and share one slice.
func TestChildEnvsScopeSecrets(t *testing.T) {
	t.Parallel()
	environ := []string{"PATH=/usr/bin", "A_TOKEN=a", "B_TOKEN=b", "EXTRA=e", "NOT_SECRET=n"}
	h := &Hook{
		Env: map[string]string{"SET": "s"}, Secrets: []string{"A_TOKEN", "B_TOKEN"}, EnvPassthrough: []string{"EXTRA"},
		Steps: []*StepDef{
			{Index: 0, Secrets: []string{"A_TOKEN"}},
			{Index: 1},
			{Index: 2, Secrets: []string{"A_TOKEN", "B_TOKEN"}},
			{Index: 3, Secrets: []string{"NOT_SECRET"}}, // not the hook's: it would not be redacted
		},
		ToolSecrets: map[string][]string{"run_command": {"B_TOKEN"}, "other": nil},
	}
	c := h.ChildEnvs(environ)
	for _, tc := range []struct {
		what string
		got  []string
		want []string
	}{
		{"step 0", c.Step(0), []string{"A_TOKEN=a", "EXTRA=e", "PATH=/usr/bin", "SET=s"}},
		{"step 1", c.Step(1), []string{"EXTRA=e", "PATH=/usr/bin", "SET=s"}},
		{"step 2", c.Step(2), []string{"A_TOKEN=a", "B_TOKEN=b", "EXTRA=e", "PATH=/usr/bin", "SET=s"}},
		{"step 3", c.Step(3), []string{"EXTRA=e", "PATH=/usr/bin", "SET=s"}},
		{"run_command", c.Tool("run_command"), []string{"B_TOKEN=b", "EXTRA=e", "PATH=/usr/bin", "SET=s"}},
		{"a tool with no secrets", c.Tool("other"), []string{"EXTRA=e", "PATH=/usr/bin", "SET=s"}},
		{"an unlisted tool", c.Tool("read_file"), []string{"EXTRA=e", "PATH=/usr/bin", "SET=s"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: environment %q, want %q", tc.what, tc.got, tc.want)
		}
	}
	if &c.Step(1)[0] != &c.Base()[0] || &c.Tool("read_file")[0] != &c.Base()[0] {
		t.Errorf("a step or tool naming no secret does not share the base environment")
	}
	te := &ToolEnv{Environ: []string{"PATH=/x"}}
	if got := te.ToolEnviron("run_command"); !slices.Equal(got, te.Environ) {
		t.Errorf("a ToolEnv without a hook's environments: ToolEnviron = %q, want Environ", got)
	}
}
