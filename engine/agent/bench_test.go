package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/llm"
)

// instantServer answers chat-completions requests at once with
// pre-encoded bodies: rounds-1 answers that call test_echo, then a final
// answer. It measures the time its handler takes (reading the request
// included), so that time can be taken out of the engine's.
type instantServer struct {
	rounds  int
	calls   []byte
	answer  []byte
	n       atomic.Int64
	handler atomic.Int64 // ns spent in the handler
}

func newInstantServer(rounds int) *instantServer {
	enc := func(msg map[string]any, finish string) []byte {
		b, _ := json.Marshal(map[string]any{
			"id": "x", "object": "chat.completion", "model": "bench",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
		})
		return b
	}
	return &instantServer{
		rounds: rounds,
		calls: enc(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function", "function": map[string]any{"name": "test_echo", "arguments": `{"text":"hi"}`}}}}, "tool_calls"),
		answer: enc(map[string]any{"role": "assistant", "content": "done"}, "stop"),
	}
}

func (s *instantServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	io.Copy(io.Discard, r.Body)
	body := s.calls
	if int(s.n.Add(1))%s.rounds == 0 {
		body = s.answer
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
	s.handler.Add(int64(time.Since(start)))
}

// handlerTransport calls a handler in process: no sockets, so what is
// measured is hookd's own work plus go-openai's and net/http's.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	res := rec.Result()
	res.Request = req
	return res, nil
}

// BenchmarkModelRound measures the engine's overhead per model round —
// building the request, the HTTP client, decoding the answer, checking
// and running a tool call, recording the transcript — with a server that
// answers instantly, its handler's own time subtracted. Each iteration is
// one model stage of 5 rounds (4 tool-calling answers and a final one).
// It reports the median per round; the target is <= 1 ms.
func BenchmarkModelRound(b *testing.B) {
	for _, mode := range []string{"loopback", "in-process"} {
		b.Run(mode, func(b *testing.B) {
			const rounds = 5
			srv := newInstantServer(rounds)
			var client *http.Client
			base := "http://bench.invalid/v1"
			if mode == "loopback" {
				ts := httptest.NewServer(srv)
				defer ts.Close()
				client, base = ts.Client(), ts.URL+"/v1"
			} else {
				client = &http.Client{Transport: handlerTransport{srv}}
			}
			c := agent.New(agent.Options{Chat: llm.New(llm.Options{
				HTTPClient: client, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				LookupEnv: func(string) (string, bool) { return "", false },
			})})
			h := &engine.Hook{Name: "bench", Prompt: "x", Workdir: b.TempDir(), Tools: []string{"test_echo"},
				LLM: engine.LLMConfig{Model: "bench", BaseURL: base}}
			env := &engine.ToolEnv{Hook: h, Workdir: h.Workdir}
			ctx := context.Background()
			perRound := make([]float64, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				run := &engine.Run{ID: "R", Prompt: "Summarise the state of things, please."}
				before := srv.handler.Load()
				start := time.Now()
				if err := c.Complete(ctx, &engine.LLMRequest{Hook: h, Run: run, Env: env}); err != nil {
					b.Fatal(err)
				}
				total := time.Since(start) - time.Duration(srv.handler.Load()-before)
				if !bytes.Contains(run.ToolCalls, []byte(`"stop":"answer"`)) {
					b.Fatalf("transcript %s", run.ToolCalls)
				}
				perRound = append(perRound, float64(total)/rounds)
			}
			b.StopTimer()
			slices.Sort(perRound)
			median := perRound[len(perRound)/2]
			b.ReportMetric(median, "ns/round")
			if len(perRound) < 100 {
				return // the probe run go test makes first
			}
			fmt.Printf("engine overhead per model round (%s, server time excluded): median %s over %d stages of %d rounds\n",
				mode, time.Duration(median).Round(time.Microsecond), len(perRound), rounds)
		})
	}
}
