package engine

import (
	"slices"
	"sync"
	"testing"
)

// TestHookChildEnvKeptAndRebuilt: a loaded hook's child environment is
// built once for all its runs (hookShared), and built again when a
// reload gives its entry another hook; ChildEnv follows what it comes
// from: hookd's environ (another slice or the same one changed), the
// hook's env, secrets or env_passthrough; a copy of a hook changed after
// it was copied gets its own.
func TestHookChildEnvKeptAndRebuilt(t *testing.T) {
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
	first := s.shared(ent).environ
	want(first, "HOME=/home/a", "PATH=/usr/bin", "SET=s1")
	if again := s.shared(ent).environ; &again[0] != &first[0] {
		t.Errorf("a second run of the loaded hook built the environment again")
	}
	ent.hook = &Hook{Env: map[string]string{"SET": "reloaded"}}
	want(s.shared(ent).environ, "HOME=/home/a", "PATH=/usr/bin", "SET=reloaded")
	want(h.ChildEnv(slices.Clone(environ)), "HOME=/home/a", "PATH=/usr/bin", "SET=s1")
	if cap(first) != len(first) {
		t.Errorf("the shared environment has room to append in place (len %d, cap %d)", len(first), cap(first))
	}

	environ[0] = "PATH=/opt/bin" // the same slice, changed
	want(h.ChildEnv(environ), "HOME=/home/a", "PATH=/opt/bin", "SET=s1")
	want(h.ChildEnv(append(slices.Clone(environ), "HOME=/home/b")), "HOME=/home/b", "PATH=/opt/bin", "SET=s1")

	h.Env["SET"] = "s2"
	want(h.ChildEnv(environ), "HOME=/home/a", "PATH=/opt/bin", "SET=s2")
	h.Secrets = []string{"TOKEN"}
	want(h.ChildEnv(environ), "HOME=/home/a", "PATH=/opt/bin", "SET=s2", "TOKEN=t1")
	h.EnvPassthrough = []string{"EXTRA"}
	want(h.ChildEnv(environ), "EXTRA=e1", "HOME=/home/a", "PATH=/opt/bin", "SET=s2", "TOKEN=t1")

	cp := &Hook{Env: map[string]string{"SET": "copy"}, Secrets: h.Secrets, EnvPassthrough: h.EnvPassthrough}
	want(cp.ChildEnv(environ), "EXTRA=e1", "HOME=/home/a", "PATH=/opt/bin", "SET=copy", "TOKEN=t1")
	want(h.ChildEnv(environ), "EXTRA=e1", "HOME=/home/a", "PATH=/opt/bin", "SET=s2", "TOKEN=t1")
}

// TestHookChildEnvConcurrent: runs of one hook ask for its environment at
// the same time (run with -race).
func TestHookChildEnvConcurrent(t *testing.T) {
	h := &Hook{Env: map[string]string{"SET": "x"}}
	environs := [][]string{{"PATH=/a"}, {"PATH=/b"}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				e := environs[(g+i)%2]
				if got := h.ChildEnv(e); !slices.Equal(got, []string{e[0], "SET=x"}) {
					t.Errorf("ChildEnv(%q) = %q", e, got)
					return
				}
			}
		})
	}
	wg.Wait()
}
