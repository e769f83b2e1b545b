package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestErrorShapesEndToEnd drives `hookd serve` against a model server
// that fails in each shape real servers use (the bytes are quoted as
// they send them): first with a 503, which hookd retries, then with a
// 400, which fails the run. What the user sees — the run's error and
// `hookd run`'s attempts — holds the server's message, or its body when
// no message decodes. A 200 whose error body names 502 (OpenRouter) is
// retried and the run completes.
func TestErrorShapesEndToEnd(t *testing.T) {
	shapes := []struct {
		name, contentType, body string
		empty                   bool
		want                    string // %s: the status text, for an empty body
	}{
		{"OpenAI", "", `{"error":{"message":"The model does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, false,
			"The model does not exist"},
		{"vLLM", "", `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`, false,
			"This model's maximum context length is 4096 tokens."},
		{"bare string", "", `{"error":"model \"llama3\" not found, try pulling it first"}`, false,
			`model "llama3" not found, try pulling it first`},
		{"type, no message", "", `{"error":{"type":"server_error"}}`, false,
			`{"error":{"type":"server_error"}}`},
		{"FastAPI detail", "", `{"detail":"Not Found"}`, false, "Not Found"},
		{"plain text", "text/plain; charset=utf-8", "Bad Gateway: upstream model server refused the connection\n", false,
			"Bad Gateway: upstream model server refused the connection"},
		{"HTML", "text/html", "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", false,
			"503 Service Temporarily Unavailable nginx"},
		{"empty", "", "", true, "%s (the body is empty)"},
	}
	var mu sync.Mutex
	seen := map[string]int{}
	model := llmtest.NewFunc(func(req llmtest.Request) llmtest.Reply {
		mu.Lock()
		seen[req.Chat.Model]++
		n := seen[req.Chat.Model]
		mu.Unlock()
		if req.Chat.Model == "openrouter" {
			if n == 1 {
				return llmtest.Reply{Body: `{"error":{"message":"Provider returned error","code":502,"metadata":{"provider_name":"Together"}}}`}
			}
			return llmtest.Answer("upstream recovered")
		}
		var i int
		fmt.Sscanf(req.Chat.Model, "shape-%d", &i)
		s := shapes[i]
		status := 503
		if n > 1 {
			status = 400
		}
		return llmtest.Reply{Status: status, Body: s.body, ContentType: s.contentType, Empty: s.empty}
	})
	defer model.Close()
	hooks := map[string]string{"openrouter.yaml": "llm: {model: openrouter}\nprompt: hi\n"}
	for i := range shapes {
		hooks[fmt.Sprintf("shape-%d.yaml", i)] = fmt.Sprintf("llm: {model: shape-%d}\nprompt: hi\n", i)
	}
	e := newEnv(t, "llm:\n  base_url: "+model.BaseURL()+"\n", hooks)
	e.serve()

	var table []string
	for i, s := range shapes {
		name := fmt.Sprintf("shape-%d", i)
		r := e.must(1, "fire", name, "--wait")
		run := e.getRun(runID(t, r))
		want503, want400 := s.want, s.want
		if strings.Contains(s.want, "%s") {
			want503, want400 = fmt.Sprintf(s.want, "Service Unavailable"), fmt.Sprintf(s.want, "Bad Request")
		}
		wantErr := "model call 1: HTTP 400: " + want400
		if run.Status != engine.StatusFailed || run.Error != wantErr {
			t.Errorf("%s: %s %q, want failed %q", s.name, run.Status, run.Error, wantErr)
			continue
		}
		tr, err := agent.DecodeTranscript(run)
		if err != nil || tr == nil || len(tr.Rounds) != 1 {
			t.Fatalf("%s: transcript %v: %s", s.name, err, run.ToolCalls)
		}
		a := tr.Rounds[0].Call.Attempts
		if len(a) != 2 || a[0].Status != 503 || a[0].Error != want503 || a[0].Wait == 0 || a[1].Status != 400 {
			t.Errorf("%s: attempts %+v", s.name, a)
		}
		shown := e.must(0, "run", run.ID).stdout
		if !strings.Contains(shown, "attempt failed: HTTP 503: "+want503+"; retried after") {
			t.Errorf("%s: hookd run shows:\n%s", s.name, shown)
		}
		if !strings.Contains(r.stderr, name+" failed (model_error)") || !strings.Contains(r.stderr, wantErr) {
			t.Errorf("%s: hookd fire --wait says %q", s.name, r.stderr)
		}
		table = append(table, fmt.Sprintf("| %s | `attempt failed: HTTP 503: %s` | `%s` |", s.name, want503, strings.TrimSpace(r.stderr)))
	}

	r := e.must(0, "fire", "openrouter", "--wait")
	run := e.getRun(runID(t, r))
	if run.Status != engine.StatusCompleted || run.Response != "upstream recovered" {
		t.Errorf("openrouter: %s %q %q", run.Status, run.Error, run.Response)
	}
	shown := e.must(0, "run", run.ID).stdout
	if !strings.Contains(shown, "attempt failed: HTTP 200: error body (code 502): Provider returned error; retried after") {
		t.Errorf("openrouter: hookd run shows:\n%s", shown)
	}
	t.Logf("what the user sees:\n%s", strings.Join(table, "\n"))
}
