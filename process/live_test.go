package process

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/redact"
)

// Live gets what the command writes, redacted, each stream capped at
// MaxOutput as the record is, then a note that the rest is not shown.
func TestCommandLive(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{}
	c := Command{
		Argv:      []string{"sh", "-c", `printf 'key=%s!0123456789abcdefghijklmnopqrstuvwxyz' "$TOKEN"; printf 'err' >&2`},
		Env:       append(engine.ChildEnv(nil, nil, nil), "TOKEN=sekrit-value-42"),
		MaxOutput: 40,
		Redactor:  redact.New([]string{"TOKEN"}, []string{"TOKEN=sekrit-value-42"}),
		Live: func(stream string, p []byte) {
			mu.Lock()
			got[stream] += string(p)
			mu.Unlock()
		},
	}
	r := c.Run(context.Background())
	if r.Err != nil || r.ExitCode != 0 {
		t.Fatalf("run: %+v", r)
	}
	out := got["stdout"]
	if strings.Contains(out, "sekrit") {
		t.Errorf("live stdout holds the secret: %q", out)
	}
	head, note, ok := strings.Cut(out, "\n[hookd: live stdout stops at max_output (40 bytes)")
	if !ok || len(head) != 40 || !strings.HasPrefix(head, "key=[REDACTED") || !strings.Contains(note, "the record keeps the end") {
		t.Errorf("live stdout = %q; want its first 40 bytes, redacted, then the note", out)
	}
	if got["stderr"] != "err" {
		t.Errorf("live stderr = %q, want %q", got["stderr"], "err")
	}
}

// LiveRedactor redacts what Live gets, also a secret written in two
// pieces, and leaves the result as the command wrote it.
func TestCommandLiveRedactorOnly(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{}
	c := Command{
		// Two writes by two processes: the secret is cut between them.
		Argv:         []string{"sh", "-c", `printf '{"token":"%s' "$(printf %s "$TOKEN" | head -c 6)"; printf '%s"}\n' "$(printf %s "$TOKEN" | tail -c +7)"; printf 'why: %s\n' "$TOKEN" >&2`},
		Env:          append(engine.ChildEnv(nil, nil, nil), "TOKEN=sekrit-value-42"),
		LiveRedactor: redact.New([]string{"TOKEN"}, []string{"TOKEN=sekrit-value-42"}),
		Live: func(stream string, p []byte) {
			mu.Lock()
			got[stream] += string(p)
			mu.Unlock()
		},
	}
	r := c.Run(context.Background())
	if r.Err != nil || r.ExitCode != 0 {
		t.Fatalf("run: %+v", r)
	}
	if want := `{"token":"[REDACTED:TOKEN]"}` + "\n"; got["stdout"] != want {
		t.Errorf("live stdout = %q, want %q", got["stdout"], want)
	}
	if want := "why: [REDACTED:TOKEN]\n"; got["stderr"] != want {
		t.Errorf("live stderr = %q, want %q", got["stderr"], want)
	}
	if r.Stdout != `{"token":"sekrit-value-42"}`+"\n" || r.Stderr != "why: sekrit-value-42\n" {
		t.Errorf("the result = %q %q, want the output as written", r.Stdout, r.Stderr)
	}
}
