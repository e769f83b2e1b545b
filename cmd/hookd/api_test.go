package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
)

// apiClient talks HTTP to a daemon under test, over its unix socket or
// over TCP.
type apiClient struct {
	t     *testing.T
	http  *http.Client
	base  string
	token string
}

// socketClient is a client on the daemon's unix socket.
func (e *env) socketClient() *apiClient {
	sock := e.path(".hookd/hookd.sock")
	return &apiClient{t: e.t, base: "http://hookd", http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}}
}

// tcpClient is a client on a daemon's TCP listener.
func tcpClient(t *testing.T, addr, token string) *apiClient {
	return &apiClient{t: t, base: "http://" + addr, token: token, http: &http.Client{}}
}

// call sends a request (body: nil, a string sent as is, or a value sent
// as JSON) and returns the status and the body.
func (c *apiClient) call(method, path string, body any, hdr ...string) (int, []byte) {
	c.t.Helper()
	code, b, _ := c.callH(method, path, body, hdr...)
	return code, b
}

func (c *apiClient) callH(method, path string, body any, hdr ...string) (int, []byte, http.Header) {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, out, resp.Header
}

// get decodes the JSON answer of a request that must succeed with want.
func (c *apiClient) json(method, path string, body any, want int, out any) {
	c.t.Helper()
	code, b := c.call(method, path, body)
	if code != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

var apiHooks = map[string]string{
	"hello.yaml": `description: says hello
steps:
  - name: say
    type: shell
    command: echo hello {{event.who}}
skip_llm: true
`,
	"cool.yaml": `cooldown: 1h
steps:
  - type: shell
    command: "true"
skip_llm: true
`,
	"deploy.yaml": `trigger:
  event: deploy.*
  where: {env: prod}
steps:
  - type: shell
    command: echo deployed {{event.service}}
skip_llm: true
`,
}

// TestAPISocket goes through the JSON API on the unix socket: hooks, fire
// (and a gate's refusal), runs with filters and paging, one run, pause and
// resume, and publishing events with its validation and idempotency.
func TestAPISocket(t *testing.T) {
	e := newEnv(t, "", apiHooks)
	e.serve()
	c := e.socketClient()

	var h api.Health
	c.json("GET", "/healthz", nil, 200, &h)
	if h.Status != "ok" || !strings.HasSuffix(h.DB, "hookd.db") || h.PID == 0 {
		t.Errorf("healthz: %+v", h)
	}
	var hooks []engine.HookStatus
	c.json("GET", "/v1/hooks", nil, 200, &hooks)
	if len(hooks) != 3 || hooks[0].Name != "cool" || hooks[1].Name != "deploy" || hooks[1].Trigger != "event deploy.*" {
		t.Errorf("hooks: %+v", hooks)
	}

	// Fire, wait, read the run with its steps.
	var fired api.RunAnswer
	c.json("POST", "/v1/hooks/hello/fire", map[string]any{"event": map[string]any{"who": "api"}}, 200, &fired)
	var final engine.Run
	c.json("GET", "/v1/runs/"+fired.Run.ID+"/wait", nil, 200, &final)
	if final.Status != engine.StatusCompleted || len(final.Steps) != 1 || final.Steps[0].Output != "hello api\n" {
		t.Errorf("fired run: %+v", final)
	}
	var one engine.Run
	c.json("GET", "/v1/runs/"+fired.Run.ID, nil, 200, &one)
	if one.ID != fired.Run.ID || one.Steps[0].Name != "say" {
		t.Errorf("run: %+v", one)
	}
	if code, b := c.call("GET", "/v1/runs/nope", nil); code != 404 || !strings.Contains(string(b), "not found") {
		t.Errorf("unknown run: %d %s", code, b)
	}
	if code, b := c.call("POST", "/v1/hooks/nope/fire", nil); code != 404 {
		t.Errorf("fire unknown hook: %d %s", code, b)
	}

	// The cooldown gate refuses the second fire: 409 naming the gate; force passes it.
	var cool api.RunAnswer
	c.json("POST", "/v1/hooks/cool/fire", nil, 200, &cool)
	c.json("GET", "/v1/runs/"+cool.Run.ID+"/wait", nil, 200, nil)
	var refused api.Error
	c.json("POST", "/v1/hooks/cool/fire", nil, 409, &refused)
	if refused.Gate != engine.GateCooldown || !strings.Contains(refused.Error, "--force") {
		t.Errorf("refusal: %+v", refused)
	}
	c.json("POST", "/v1/hooks/cool/fire", map[string]any{"force": true}, 200, nil)

	// Pause and resume.
	c.json("POST", "/v1/hooks/hello/pause", nil, 200, nil)
	c.json("POST", "/v1/hooks/hello/fire", nil, 409, &refused)
	if refused.Gate != engine.GatePaused {
		t.Errorf("fire of a paused hook: %+v", refused)
	}
	c.json("POST", "/v1/hooks/hello/resume", nil, 200, nil)

	// Runs: filters and paging.
	for range 3 {
		var a api.RunAnswer
		c.json("POST", "/v1/hooks/hello/fire", nil, 200, &a)
		c.json("GET", "/v1/runs/"+a.Run.ID+"/wait", nil, 200, nil)
	}
	var page1, page2, skipped []*engine.Run
	c.json("GET", "/v1/runs?hook=hello&limit=2", nil, 200, &page1)
	if len(page1) != 2 {
		t.Fatalf("page 1: %d runs", len(page1))
	}
	c.json("GET", "/v1/runs?hook=hello&limit=10&before="+page1[1].ID, nil, 200, &page2)
	if len(page2) != 3 { // 5 runs of hello: 4 completed, 1 skipped (paused)
		t.Errorf("page 2: %d runs, want 3", len(page2))
	}
	for _, r := range append(page1, page2...) {
		if r.Hook != "hello" {
			t.Errorf("filter by hook returned %s", r.Hook)
		}
	}
	c.json("GET", "/v1/runs?status=skipped", nil, 200, &skipped)
	if len(skipped) != 2 { // cool (cooldown) and hello (paused)
		t.Errorf("skipped runs: %d, want 2", len(skipped))
	}
	if code, _ := c.call("GET", "/v1/runs?limit=x", nil); code != 400 {
		t.Errorf("bad limit: %d", code)
	}

	// Publish: stored, dispatched, its id and seq returned.
	var ans api.EmitAnswer
	c.json("POST", "/v1/events", map[string]any{"type": "deploy.finished", "id": "deploy-42",
		"data": map[string]any{"env": "prod", "service": "api"}}, 200, &ans)
	if ans.EventID != "deploy-42" || ans.Seq == 0 || len(ans.Runs) != 1 || ans.Runs[0].Hook != "deploy" || ans.Duplicate {
		t.Fatalf("emit: %+v", ans)
	}
	// A retry with the same id: 200, the same seq, duplicate, no run.
	var again api.EmitAnswer
	c.json("POST", "/v1/events", map[string]any{"type": "deploy.finished", "id": "deploy-42",
		"data": map[string]any{"env": "prod", "service": "api"}}, 200, &again)
	if !again.Duplicate || again.Seq != ans.Seq || again.EventID != "deploy-42" || len(again.Runs) != 0 {
		t.Errorf("retry: %+v", again)
	}
	c.json("GET", "/v1/runs/"+ans.Runs[0].ID+"/wait", nil, 200, nil)
	var deploys []*engine.Run
	c.json("GET", "/v1/runs?hook=deploy", nil, 200, &deploys)
	if len(deploys) != 1 {
		t.Errorf("%d runs of deploy, want 1", len(deploys))
	}
	// No id: one is made up.
	c.json("POST", "/v1/events", `{"type":"other.thing"}`, 200, &ans)
	if len(ans.EventID) != 26 || ans.Runs == nil {
		t.Errorf("emit without id: %+v", ans)
	}
	// The stored events, after a seq.
	var evs []api.Event
	c.json("GET", fmt.Sprintf("/v1/events?after=%d&type=deploy.*,other.**", again.Seq-1), nil, 200, &evs)
	if len(evs) != 2 || evs[0].ID != "deploy-42" || evs[0].Data["service"] != "api" || evs[1].Type != "other.thing" {
		t.Errorf("events after: %+v", evs)
	}

	// Malformed input: a clear 4xx.
	for _, tc := range []struct {
		body string
		code int
		msg  string
	}{
		{``, 400, "type is required"},
		{`{`, 400, "bad request body"},
		{`not json`, 400, "bad request body"},
		{`{"type":"a"} {"type":"b"}`, 400, "after the JSON object"},
		{`{"type":"a","dat":{}}`, 400, "unknown field"},
		{`{"type":"a","data":[1]}`, 400, "bad request body"},
		{`{"type":"a","data":"x"}`, 400, "bad request body"},
		{`{"type":7}`, 400, "bad request body"},
		{`{"type":"deploy.*"}`, 400, "invalid character '*'"},
		{`{"type":"a..b"}`, 400, "segment 2 is empty"},
		{`{"type":"hook.run.failed"}`, 400, "published by hookd itself"},
		{`{"type":"a","id":"has space"}`, 400, "printable ASCII"},
		{`{"type":"` + strings.Repeat("a", 300) + `"}`, 400, "longer than"},
		{`{"type":"a","data":{"x":"` + strings.Repeat("y", 2<<20) + `"}}`, 413, "larger than"},
	} {
		code, b := c.call("POST", "/v1/events", tc.body)
		if code != tc.code || !strings.Contains(string(b), tc.msg) {
			t.Errorf("POST /v1/events %.60q: %d %s; want %d with %q", tc.body, code, b, tc.code, tc.msg)
		}
	}
}

// tcpAddr returns the TCP address the daemon logged.
func (d *served) tcpAddr() string {
	d.e.t.Helper()
	m := regexp.MustCompile(`listen=(\S+)`).FindStringSubmatch(d.log.String())
	if m == nil {
		d.e.t.Fatalf("the daemon did not log its TCP address:\n%s", d.log)
	}
	return m[1]
}

const testToken = "s3cret-token-0123456789abcdef"

// TestAPITCP: with listen: and a token, the API answers on TCP only with
// the token; /healthz says ok without it and nothing more.
func TestAPITCP(t *testing.T) {
	e := newEnv(t, "listen: 127.0.0.1:0\n", apiHooks)
	e.environ = []string{"HOOKD_TOKEN=" + testToken}
	d := e.serve()
	addr := d.tcpAddr()

	anon := tcpClient(t, addr, "")
	code, b, hdr := anon.callH("GET", "/v1/hooks", nil)
	if code != 401 || !strings.Contains(string(b), "missing bearer token") || hdr.Get("WWW-Authenticate") == "" {
		t.Errorf("no token: %d %s %v", code, b, hdr)
	}
	for _, path := range []string{"/metrics", "/v1/stream", "/v1/status", "/v1/runs"} {
		if code, _ := anon.call("GET", path, nil); code != 401 {
			t.Errorf("GET %s without the token: %d", path, code)
		}
	}
	if code, _ := anon.call("POST", "/v1/events", `{"type":"deploy.finished"}`); code != 401 {
		t.Errorf("POST /v1/events without the token: %d", code)
	}
	if code, b := tcpClient(t, addr, testToken+"x").call("GET", "/v1/hooks", nil); code != 401 || !strings.Contains(string(b), "wrong bearer token") {
		t.Errorf("wrong token: %d %s", code, b)
	}
	var h api.Health
	anon.json("GET", "/healthz", nil, 200, &h)
	if h.Status != "ok" || h.DB != "" || h.PID != 0 {
		t.Errorf("healthz without the token tells more than ok: %+v", h)
	}

	c := tcpClient(t, addr, testToken)
	var hooks []engine.HookStatus
	c.json("GET", "/v1/hooks", nil, 200, &hooks)
	if len(hooks) != 3 {
		t.Errorf("hooks over TCP: %+v", hooks)
	}
	var ans api.EmitAnswer
	c.json("POST", "/v1/events", map[string]any{"type": "deploy.finished", "data": map[string]any{"env": "prod", "service": "tcp"}}, 200, &ans)
	if len(ans.Runs) != 1 {
		t.Fatalf("emit over TCP: %+v", ans)
	}
	var run engine.Run
	c.json("GET", "/v1/runs/"+ans.Runs[0].ID+"/wait", nil, 200, &run)
	if run.Status != engine.StatusCompleted || run.Steps[0].Output != "deployed tcp\n" {
		t.Errorf("run: %+v", run)
	}
	// The run's counter follows its hook.run.completed event, which is
	// dispatched just after the run is final.
	waitFor(t, "metrics over TCP", func() bool {
		code, b := c.call("GET", "/metrics", nil)
		return code == 200 && strings.Contains(string(b), "hookd_runs_total")
	}, d.log.String)
	if strings.Contains(d.log.String(), testToken) {
		t.Errorf("the token is in the log:\n%s", d.log)
	}
	// The unix socket needs no token.
	e.socketClient().json("GET", "/v1/hooks", nil, 200, nil)
}

// TestAPITCPDropsUnauthenticated opens many connections without the token,
// each sending one keep-alive request, as a client hoarding connections
// does: the daemon answers 401 and closes every one of them
// (TestServerLimits, in api/server, checks the limits of the connections
// that send nothing).
func TestAPITCPDropsUnauthenticated(t *testing.T) {
	e := newEnv(t, "listen: 127.0.0.1:0\n", apiHooks)
	e.environ = []string{"HOOKD_TOKEN=" + testToken}
	d := e.serve()
	addr := d.tcpAddr()
	var conns []net.Conn
	for range 20 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "GET /v1/hooks HTTP/1.1\r\nHost: hookd\r\nConnection: keep-alive\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
	}
	for i, conn := range conns {
		// The deadline only ends the test should the connection stay open.
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("conn %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("conn %d: status %d", i, resp.StatusCode)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("conn %d: after the 401 the connection stayed open (read: %v)", i, err)
		}
	}
}

// TestListenNeedsToken: hookd refuses to listen on TCP without a token
// (on a non-loopback address, and on loopback too), and reads it from
// token_file as well as from the environment.
func TestListenNeedsToken(t *testing.T) {
	for _, tc := range []struct {
		name, settings string
		environ        []string
		want           string
	}{
		{"non-loopback", "listen: 0.0.0.0:0\n", nil, "refusing to serve the API on a non-loopback address without a bearer token"},
		{"loopback", "listen: 127.0.0.1:0\n", nil, "on a loopback address without a bearer token"},
		{"short", "listen: 127.0.0.1:0\n", []string{"HOOKD_TOKEN=short"}, "shorter than 16 characters"},
		{"own env", "listen: '[::]:0'\ntoken_env: MY_TOKEN\n", []string{"HOOKD_TOKEN=" + testToken}, "put a token of at least 16 characters in $MY_TOKEN"},
		{"missing file", "listen: 127.0.0.1:0\ntoken_file: nope.txt\n", nil, "read token_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.settings, apiHooks)
			e.environ = tc.environ
			d := e.startServe()
			if code := d.wait(); code != exitError || !strings.Contains(d.log.String(), tc.want) {
				t.Errorf("exit %d, want 1 with %q:\n%s", code, tc.want, d.log)
			}
			if e.exists(".hookd/hookd.sock") {
				t.Error("the refused daemon left a socket")
			}
		})
	}

	e := newEnv(t, "listen: 127.0.0.1:0\ntoken_file: secrets/token\n", apiHooks)
	if err := os.Mkdir(e.path("secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	e.write("secrets/token", testToken+"\n")
	d := e.serve()
	tcpClient(t, d.tcpAddr(), testToken).json("GET", "/v1/status", nil, 200, nil)
}

func newRequest(method, url string, body []byte) (*http.Request, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, err
}
