package llm_test

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/agenttest"
	"github.com/hookd/hookd/llm"
	"github.com/hookd/hookd/llm/llmtest"
)

// ErrorShape is an error body a real server sends, byte for byte, and
// what hookd shows of it.
type errorShape struct {
	name        string
	contentType string
	body        string // "" with empty: no body at all
	empty       bool
	want        string // the message shown for it (with a 500)
}

// errorShapes are the bodies issue 14 met, quoted as the servers send
// them.
var errorShapes = []errorShape{
	{name: "openai", body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
		want: "The server had an error while processing your request. Sorry about that!"},
	{name: "vllm", body: `{"object":"error","message":"The model ` + "`gpt-x`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`,
		want: "The model `gpt-x` does not exist."},
	{name: "bare string (Ollama, TGI, mock-llm)", body: `{"error":"model \"llama3\" not found, try pulling it first"}`,
		want: `model "llama3" not found, try pulling it first`},
	{name: "llama.cpp", body: `{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at line 1, column 9","type":"server_error"}}`,
		want: "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at line 1, column 9"},
	{name: "label beside a message (Express)", body: `{"error":"SyntaxError","message":"Unexpected token } in JSON at position 41"}`,
		want: "SyntaxError: Unexpected token } in JSON at position 41"},
	{name: "label beside a detail", body: `{"error":"BadRequest","detail":"messages: field required"}`,
		want: "BadRequest: messages: field required"},
	{name: "type without message", body: `{"error":{"type":"server_error"}}`,
		want: `{"error":{"type":"server_error"}}`},
	{name: "fastapi detail", body: `{"detail":"CUDA out of memory. Tried to allocate 2.00 GiB"}`,
		want: "CUDA out of memory. Tried to allocate 2.00 GiB"},
	{name: "fastapi validation list", body: `{"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}`,
		want: `{"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}`},
	{name: "plain text", contentType: "text/plain", body: "upstream connect error or disconnect/reset before headers. reset reason: connection termination",
		want: "upstream connect error or disconnect/reset before headers. reset reason: connection termination"},
	{name: "html from a proxy", contentType: "text/html",
		body: "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n",
		want: "502 Bad Gateway nginx/1.25.3"},
	{name: "empty body", empty: true, want: "Internal Server Error (the body is empty)"},
}

func (s errorShape) reply(status int) llmtest.Reply {
	return llmtest.Reply{Status: status, Body: s.body, ContentType: s.contentType, Empty: s.empty}
}

// TestErrorShapes answers with each shape as a 500 and then as a 429:
// both are retried, and the attempts record the status, the message and
// the body. The same shape as a 400 fails the run at once with the
// message.
func TestErrorShapes(t *testing.T) {
	t.Parallel()
	for _, s := range errorShapes {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(s.reply(500), s.reply(429), llmtest.Answer("recovered"))
			run, tr, f := agenttest.FireOne(t, srv)
			agenttest.WantStatus(t, run, engine.StatusCompleted, "")
			if run.Response != "recovered" || len(srv.Requests()) != 3 || len(f.Waits) != 2 {
				t.Fatalf("response %q after %d requests, waits %v: 500 and 429 must be retried", run.Response, len(srv.Requests()), f.Waits)
			}
			a := tr.Rounds[0].Call.Attempts
			if len(a) != 2 || a[0].Status != 500 || a[1].Status != 429 {
				t.Fatalf("attempts %+v", a)
			}
			want429 := strings.Replace(s.want, "Internal Server Error", "Too Many Requests", 1)
			if a[0].Error != s.want || a[1].Error != want429 {
				t.Errorf("attempt errors %q, %q; want %q, %q", a[0].Error, a[1].Error, s.want, want429)
			}
			if wantBody := strings.Join(strings.Fields(s.body), " "); a[0].Body != wantBody {
				t.Errorf("attempt body %q, want %q", a[0].Body, wantBody)
			}

			srv = llmtest.New(s.reply(400), llmtest.Answer("never"))
			run, tr, _ = agenttest.FireOne(t, srv)
			want := "model call 1: HTTP 400: " + strings.Replace(s.want, "Internal Server Error", "Bad Request", 1)
			agenttest.WantStatus(t, run, engine.StatusFailed, want)
			if run.Error != want || len(srv.Requests()) != 1 {
				t.Errorf("400: error %q after %d requests; want %q after 1", run.Error, len(srv.Requests()), want)
			}
			if a := tr.Rounds[0].Call.Attempts; len(a) != 1 || a[0].Status != 400 {
				t.Errorf("400: attempts %+v", a)
			}
		})
	}
}

// TestErrorBodyRedacted: a proxy that echoes the request's secrets in
// its error page does not put them in the record, however long the body
// and wherever the cut falls.
func TestErrorBodyRedacted(t *testing.T) {
	t.Parallel()
	// The second copy straddles byte 1000, where the recorded body is cut.
	body := `{"error":"bad upstream header x-secret: ` + agenttest.SecretValue + strings.Repeat(" pad", 235) + agenttest.SecretValue + `"}`
	srv := llmtest.New(llmtest.Reply{Status: 502, Body: body, Repeat: true})
	f := agenttest.Start(t, srv, agenttest.NewHook(t, srv), func(o *llm.Options) { o.Retry.MaxAttempts = 2 })
	run, tr := f.Fire()
	agenttest.WantStatus(t, run, engine.StatusFailed, "HTTP 502: bad upstream header x-secret:")
	for _, s := range []string{run.Error, string(run.ToolCalls)} {
		if strings.Contains(s, agenttest.SecretValue) || strings.Contains(s, agenttest.SecretValue[:5]) {
			t.Errorf("the secret leaked: %s", s)
		}
	}
	if len(tr.Rounds[0].Call.Attempts) != 2 || tr.Rounds[0].Call.Attempts[1].Body == "" {
		t.Errorf("attempts %+v", tr.Rounds[0].Call.Attempts)
	}
}

// TestOK200WithErrorBody: OpenRouter answers HTTP 200 with an error
// object when the upstream provider fails; hookd retries it like the
// status it names (502), and fails at once on one it does not retry.
func TestOK200WithErrorBody(t *testing.T) {
	t.Parallel()
	const upstream = `{"error":{"message":"Provider returned error","code":502,"metadata":{"raw":"upstream timed out","provider_name":"Together"}},"user_id":"user_2abc"}`
	srv := llmtest.New(llmtest.Reply{Body: upstream}, llmtest.Answer("second try"))
	run, tr, f := agenttest.FireOne(t, srv)
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	if run.Response != "second try" || len(f.Waits) != 1 {
		t.Fatalf("response %q, waits %v", run.Response, f.Waits)
	}
	a := tr.Rounds[0].Call.Attempts
	if len(a) != 1 || a[0].Status != 200 || a[0].Error != "error body (code 502): Provider returned error" || a[0].Body != upstream {
		t.Errorf("attempts %+v", a)
	}

	const refused = `{"error":{"message":"This endpoint's maximum context length is 8192 tokens","code":400}}`
	srv = llmtest.New(llmtest.Reply{Body: refused}, llmtest.Answer("never"))
	run, _, _ = agenttest.FireOne(t, srv)
	agenttest.WantStatus(t, run, engine.StatusFailed, "model call 1: HTTP 200: error body (code 400): This endpoint's maximum context length is 8192 tokens")
	if len(srv.Requests()) != 1 {
		t.Errorf("%d requests: a named 400 must not be retried", len(srv.Requests()))
	}
}

// TestHugeAnswerRefused performs a hostile server's attack on hookd's
// memory: an answer just past MaxAnswerBytes (16 MiB), and an error body
// as long. hookd reads no more than MaxAnswerBytes of either, fails the
// run saying why, without retrying, and keeps none of it in the record.
//
// Under -race every byte sent and read costs: on two loaded cores one
// copy of 16 MiB took 0.7 s, encoding it as JSON 4 s, decoding it 5.6 s.
// So the bodies, a chat completion and an OpenAI error object, are
// written out once here and sent byte for byte (the server encoded each
// anew), just past the bound (hookd stops reading there however long
// the body is). Reading them still takes what it takes, and no
// wall-clock bound decides the outcome: the hook has no timeout of its
// own (the daemon's default, 30 minutes, is past go test's), and
// agenttest waits for the run's end. Only the answer being refused ends
// the run failed "longer than 16 MiB".
func TestHugeAnswerRefused(t *testing.T) {
	t.Parallel()
	fill := strings.Repeat("A", llm.MaxAnswerBytes+4<<10)
	answer := `{"id":"chatcmpl-huge","object":"chat.completion","created":1,"model":"llmtest-model",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"` + fill + `"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	fail := `{"error":{"message":"` + fill + `","type":"server_error","code":null}}`
	for name, rep := range map[string]llmtest.Reply{"answer": {Body: answer}, "error": {Status: 500, Body: fail}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(rep, rep, rep)
			run, _, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Timeout = 0 })
			agenttest.WantStatus(t, run, engine.StatusFailed, "longer than 16 MiB")
			if n := srv.Served(); n != 1 {
				t.Errorf("status %d: the server was asked %d times; an answer too long is not retried", rep.Status, n)
			}
			if len(run.Response) > 0 || len(run.Error) > 4096 || len(run.ToolCalls) > 1<<20 {
				t.Errorf("status %d: the record keeps the answer: response %d bytes, error %d, transcript %d",
					rep.Status, len(run.Response), len(run.Error), len(run.ToolCalls))
			}
		})
	}
}
