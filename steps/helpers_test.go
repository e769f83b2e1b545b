package steps

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// newStep builds a step of kind from YAML, as the hook loader would.
func newStep(t testing.TB, kind, src string, timeout time.Duration) (engine.Step, error) {
	t.Helper()
	k, ok := engine.LookupStep(kind)
	if !ok {
		t.Fatalf("step kind %q is not registered", kind)
	}
	def := &engine.StepDef{Index: 1, Name: "s", Type: kind, Timeout: timeout}
	return k.New(def, yamlDecoder(src))
}

func mustStep(t testing.TB, kind, src string, timeout time.Duration) engine.Step {
	t.Helper()
	s, err := newStep(t, kind, src, timeout)
	if err != nil {
		t.Fatalf("New(%s, %q): %v", kind, src, err)
	}
	return s
}

// runStep runs s and checks the invariants every result keeps: the header
// is filled, and Error is set exactly when Run returned an error.
func runStep(t testing.TB, s engine.Step, env *engine.StepEnv) (*engine.StepResult, error) {
	t.Helper()
	res, err := s.Run(context.Background(), env)
	if res == nil {
		t.Fatalf("Run returned no result (err %v)", err)
	}
	if (err != nil) != (res.Error != "") || err != nil && res.Error != err.Error() {
		t.Fatalf("err %v but result Error %q", err, res.Error)
	}
	if res.Index != 1 || res.Name != "s" || res.Type == "" {
		t.Errorf("result header %+v", res)
	}
	return res, err
}

// newErrTests checks that each YAML source is refused at New with an
// error containing want.
func newErrTests(t *testing.T, kind string, tests []struct{ name, src, want string }) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newStep(t, kind, tt.src, 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want it to contain %q", err, tt.want)
			}
		})
	}
}

// writeFiles creates files (path -> content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// realDir returns dir with symbolic links resolved.
func realDir(t testing.TB, dir string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// gitEnv is an environment for git in tests: no user or system config,
// a fixed identity.
func gitEnv(t testing.TB) []string {
	home := t.TempDir()
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(home, "gitconfig"),
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com"}
	return env
}

// git runs git in dir with env, failing the test on error.
func git(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	testtool.Need(t, "git")
	cmd := exec.Command("git", append([]string{"-c", "user.name=Ada", "-c", "user.email=ada@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// field returns a result field as a placeholder reads it (nil when absent).
func field(r *engine.StepResult, name string) any {
	v, _ := r.Field(name)
	return v
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
