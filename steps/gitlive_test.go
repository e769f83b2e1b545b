package steps

import (
	"strings"
	"sync"
	"testing"
)

// TestGitStepsLive: the git steps show their output live (StepEnv.Output)
// as git writes it, the same text their record keeps: git_diff's and
// file_diff's diffs (the untracked file's too), and git_log's commits as
// the step lists them, not git's records.
func TestGitStepsLive(t *testing.T) {
	workdir, env := newRepo(t, "")
	writeFiles(t, workdir, map[string]string{"b.txt": "b3\n", "dir/new.txt": "new\n"})
	for _, tt := range []struct{ kind, src, want string }{
		{"git_diff", "base_branch: main", "+a2"},
		{"file_diff", "path: .", "+new"},
		{"git_log", "max_count: 10", "Ada: feature work\n    a.txt\n"},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			var (
				mu   sync.Mutex
				live = map[string]string{}
			)
			e := gitStepEnv(t, workdir, env, nil)
			e.Output = func(stream string, p []byte) {
				mu.Lock()
				live[stream] += string(p)
				mu.Unlock()
			}
			res, err := runStep(t, mustStep(t, tt.kind, tt.src, 0), e)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Output, tt.want) {
				t.Fatalf("output lacks %q:\n%s", tt.want, res.Output)
			}
			mu.Lock()
			defer mu.Unlock()
			if live["stdout"] != res.Output || live["stderr"] != "" {
				t.Errorf("live stdout:\n%s\nlive stderr: %q\nwant the output:\n%s", live["stdout"], live["stderr"], res.Output)
			}
		})
	}
}
