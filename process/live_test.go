package process

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/engine"
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
		Redactor:  engine.NewRedactor([]string{"TOKEN"}, []string{"TOKEN=sekrit-value-42"}),
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
