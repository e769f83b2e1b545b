package steps

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/process"
	"github.com/hookd/hookd/redact"
)

const capSecret = "s3cr3t-9f8e7d6c5b4a"

// fragment returns a piece of secret at least n bytes long found in s.
func fragment(s, secret string, n int) string {
	for i := 0; i+n <= len(secret); i++ {
		if strings.Contains(s, secret[i:i+n]) {
			return secret[i : i+n]
		}
	}
	return ""
}

// TestShellSecretAcrossCap: a secret that straddles the max_output cut
// (at the end of the kept head or the start of the kept tail), also
// when the command writes it in two pieces, leaves no fragment of it in
// the step's result: the output is redacted as it streams, before it is
// capped.
func TestShellSecretAcrossCap(t *testing.T) {
	const total, maxOut = 150, 64
	s := mustShellStep(t, `command: printf '%s' "$A"; printf '%s' "$B"
max_output: 64`, 0)
	environ := []string{"PATH=" + os.Getenv("PATH"), "TOK=" + capSecret}
	red := redact.New([]string{"TOK"}, environ)
	n := len(capSecret)
	var starts []int
	for p := maxOut/2 - n + 1; p < maxOut/2; p++ { // across the end of the head
		starts = append(starts, p)
	}
	for p := total - maxOut/2 - n + 1; p < total-maxOut/2; p++ { // across the start of the tail
		starts = append(starts, p)
	}
	for _, p := range starts {
		for _, split := range []int{0, n / 2} { // one write, or the secret split across two
			out := strings.Repeat("x", p) + capSecret + strings.Repeat("x", total-p-n)
			env := stepEnv(t, nil)
			env.Env = append(environ, "A="+out[:p+split], "B="+out[p+split:])
			env.Redactor = red
			res, err := s.Run(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if field(res, "truncated") != true {
				t.Fatalf("secret at %d: output not truncated: %q", p, res.Output)
			}
			if f := fragment(res.Output, capSecret, 4); f != "" {
				t.Errorf("secret at %d, split %d: fragment %q in %q", p, split, f, res.Output)
			}
		}
	}
}

// TestCommandEnvScrubbed: a Command without Env gets the allowlisted
// part of hookd's environment, not its credentials.
func TestCommandEnvScrubbed(t *testing.T) {
	t.Setenv("HOOKD_TOKEN", "daemon-token-0123456789")
	t.Setenv("OPENAI_API_KEY", "sk-daemon-0123456789")
	t.Setenv("LC_TESTING", "kept")
	c := &process.Command{Argv: []string{"env"}}
	r := c.Run(context.Background())
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	for _, leak := range []string{"daemon-token", "sk-daemon"} {
		if strings.Contains(r.Stdout, leak) {
			t.Errorf("the child saw %s:\n%s", leak, r.Stdout)
		}
	}
	for _, kept := range []string{"PATH=" + os.Getenv("PATH"), "LC_TESTING=kept"} {
		if !strings.Contains(r.Stdout, kept+"\n") {
			t.Errorf("the child lacks %s:\n%s", kept, r.Stdout)
		}
	}
}

// TestRunTestsSecretRedactedBeforeParse: run_tests parses redacted
// output, so a failure message quoting a secret is redacted too.
func TestRunTestsSecretRedactedBeforeParse(t *testing.T) {
	s := mustStep(t, "run_tests", `command: |-
  printf '%s\n' "--- FAIL: TestX (0.00s)" "    x_test.go:3: token $TOK" FAIL`, 0)
	environ := []string{"PATH=" + os.Getenv("PATH"), "TOK=" + capSecret}
	env := stepEnv(t, nil)
	env.Env, env.Redactor = environ, redact.New([]string{"TOK"}, environ)
	res, _ := runStep(t, s, env)
	if got := fmt.Sprint(res.Fields); strings.Contains(got, capSecret) || !strings.Contains(got, "[REDACTED:TOK]") {
		t.Errorf("fields: %s", got)
	}
}

// TestReadFileSecretAcrossCut: read_file keeps no piece of a secret that
// straddles max_bytes, from the head or (tail: true) from the end.
func TestReadFileSecretAcrossCut(t *testing.T) {
	const total, maxBytes = 120, 50
	environ := []string{"TOK=" + capSecret}
	red := redact.New([]string{"TOK"}, environ)
	n := len(capSecret)
	for _, tail := range []bool{false, true} {
		s := mustStep(t, "read_file", fmt.Sprintf("path: f.txt\nmax_bytes: %d\ntail: %v", maxBytes, tail), 0)
		edge := maxBytes // the head keeps [0, 50)
		if tail {
			edge = total - maxBytes // the tail keeps [70, 120)
		}
		for p := edge - n + 1; p < edge; p++ {
			env := stepEnv(t, nil)
			env.Env, env.Redactor = environ, red
			content := strings.Repeat("x", p) + capSecret + strings.Repeat("x", total-p-n)
			if err := os.WriteFile(filepath.Join(env.Workdir, "f.txt"), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := s.Run(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if field(res, "truncated") != true {
				t.Fatalf("tail %v, secret at %d: not truncated: %q", tail, p, res.Output)
			}
			if f := fragment(res.Output, capSecret, 4); f != "" {
				t.Errorf("tail %v, secret at %d: fragment %q in %q", tail, p, f, res.Output)
			}
		}
	}
}

// TestHTTPSecretAcrossMaxBody: a response body that echoes a secret
// across max_body keeps no piece of it.
func TestHTTPSecretAcrossMaxBody(t *testing.T) {
	const maxBody = 40
	n := len(capSecret)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p int
		fmt.Sscan(r.URL.Query().Get("p"), &p)
		fmt.Fprint(w, strings.Repeat("x", p)+capSecret+strings.Repeat("x", 100))
	}))
	defer srv.Close()
	environ := []string{"TOK=" + capSecret}
	s := mustStep(t, "http", fmt.Sprintf("url: %s/?p={{event.p}}\nmax_body: %d\nallow_private: true", srv.URL, maxBody), 0)
	for p := maxBody - n + 1; p < maxBody; p++ {
		env := stepEnv(t, map[string]any{"p": p})
		env.Env, env.Redactor = environ, redact.New([]string{"TOK"}, environ)
		res, err := s.Run(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		if f := fragment(res.Output, capSecret, 4); f != "" || field(res, "truncated") != true {
			t.Errorf("secret at %d: fragment %q in %q (truncated %v)", p, f, res.Output, field(res, "truncated"))
		}
	}
}
