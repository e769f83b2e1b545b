package steps

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/config"
)

func TestHTTPJSONNewErrors(t *testing.T) {
	newErrTests(t, "http", []struct{ name, src, want string }{
		{"json and body", "url: http://x/\nbody: hi\njson: {a: b}", "json: json: and body: both give the request body: keep one"},
		{"bad placeholder in a leaf", "url: http://x/\njson: {a: {b: '{{event.x'}}", "json.a.b: unclosed placeholder"},
		{"bad filter in a leaf", "url: http://x/\njson: {a: ['{{event.x | nope}}']}", `json.a[0]: placeholder {{event.x | nope}}: unknown filter "nope"`},
		{"json filter in a leaf", "url: http://x/\njson: {a: '{{event.x | trim | json}}'}", "json.a: placeholder {{event.x | trim | json}}: a json: body encodes every string itself; drop | json"},
	})
}

// TestHTTPJSONLoadErrors loads hook files with the hook loader: a json:
// body's errors name the file, line and field, and its placeholders are
// checked against the hook's steps like every other field's.
func TestHTTPJSONLoadErrors(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"json and body", `steps:
  - type: http
    url: https://example.com/hook
    body: '{"a": 1}'
    json:
      a: 1
skip_llm: true
`, "hooks.d/post.yaml:5: steps[0].json: json: and body: both give the request body: keep one"},
		{"unknown step", `steps:
  - name: health
    type: http
    url: https://example.com/health
  - type: http
    url: https://example.com/hook
    json:
      text: "ok"
      detail:
        body: "{{steps.helth.body}}"
skip_llm: true
`, "hooks.d/post.yaml:10: steps[1].json.detail.body: placeholder {{steps.helth.body}}: no step named \"helth\""},
		{"no such step", `steps:
  - type: http
    url: https://example.com/hook
    json:
      text: "{{steps.x.body}}"
skip_llm: true
`, "hooks.d/post.yaml:5: steps[0].json.text: placeholder {{steps.x.body}}"},
		{"double encoding", `steps:
  - type: http
    url: https://example.com/hook
    json:
      text: '{{event.msg | json}}'
skip_llm: true
`, "hooks.d/post.yaml:5: steps[0].json.text: placeholder {{event.msg | json}}: a json: body encodes every string itself"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.ParseHook(strings.NewReader(tt.src), "hooks.d/post.yaml", config.Options{Root: t.TempDir(), DefaultName: "post"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
	// A good one loads.
	src := `steps:
  - type: http
    method: POST
    url: https://example.com/hook
    json: {text: "{{event.msg}}", n: 3, tags: [a, "{{hook}}"], "{{literal}}": true}
skip_llm: true
`
	if _, err := config.ParseHook(strings.NewReader(src), "hooks.d/post.yaml", config.Options{Root: t.TempDir(), DefaultName: "post"}); err != nil {
		t.Errorf("a good json: body: %v", err)
	}
}

// TestHTTPJSONBody posts a json: body to a real server on loopback with
// hostile values: each placeholder's value arrives as one JSON string,
// quotes, newlines and `"}, "admin": true` included, and adds no key.
func TestHTTPJSONBody(t *testing.T) {
	var (
		mu       sync.Mutex
		gotBody  []byte
		gotCType string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		gotBody, gotCType = b, r.Header.Get("Content-Type")
		mu.Unlock()
	}))
	defer srv.Close()
	hostile := "He said \"hi\"\n\"}, \"admin\": true, \"x\": {\"\\u0022\": \"</script>"
	event := map[string]any{"msg": hostile, "count": float64(3), "obj": map[string]any{"admin": true}}
	post := func(t *testing.T, src string) (map[string]any, string) {
		t.Helper()
		res, err := runStep(t, mustStep(t, "http", "url: "+srv.URL+"/hook\nmethod: post\nallow_private: true\n"+src, 0), stepEnv(t, event))
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%v %v", err, res.Fields)
		}
		mu.Lock()
		defer mu.Unlock()
		var body map[string]any
		if err := json.Unmarshal(gotBody, &body); err != nil {
			t.Fatalf("the body is not JSON: %v\n%s", err, gotBody)
		}
		return body, gotCType
	}

	body, ctype := post(t, `json:
  text: "deploy failed: {{event.msg}}"
  raw: "{{event.msg}}"
  upper: '{{event.msg | upper}}'
  n: "{{event.count}}"
  obj: "{{event.obj}}"
  "{{event.msg}}": literal key
  nested:
    list: ["{{event.msg}}", 7, true, null]
  count: 2
`)
	if ctype != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ctype)
	}
	want := map[string]any{
		"text":          "deploy failed: " + hostile,
		"raw":           hostile,
		"upper":         strings.ToUpper(hostile),
		"n":             "3",
		"obj":           `{"admin":true}`,
		"{{event.msg}}": "literal key",
		"nested":        map[string]any{"list": []any{hostile, float64(7), true, nil}},
		"count":         float64(2),
	}
	if len(body) != len(want) || body["admin"] != nil {
		t.Errorf("keys %v: a value added structure", keysOf(body))
	}
	for k, v := range want {
		if g, _ := json.Marshal(body[k]); string(g) != mustJSON(t, v) {
			t.Errorf("%s = %s, want %s", k, g, mustJSON(t, v))
		}
	}

	// A Content-Type the hook gives is kept.
	_, ctype = post(t, "headers: {Content-Type: application/vnd.api+json}\njson: {a: '{{event.msg}}'}")
	if ctype != "application/vnd.api+json" {
		t.Errorf("Content-Type %q, want the hook's", ctype)
	}
	// A list or a scalar is a body too.
	mu.Lock()
	gotBody = nil
	mu.Unlock()
	res, err := runStep(t, mustStep(t, "http", "url: "+srv.URL+"/hook\nmethod: post\nallow_private: true\njson: ['{{event.msg}}', 1]", 0), stepEnv(t, event))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("%v %v", err, res.Fields)
	}
	mu.Lock()
	var list []any
	if err := json.Unmarshal(gotBody, &list); err != nil || len(list) != 2 || list[0] != hostile {
		t.Errorf("list body %s (%v)", gotBody, err)
	}
	mu.Unlock()

	// An unresolved placeholder fails the step before any request.
	mu.Lock()
	gotBody = nil
	mu.Unlock()
	res, err = runStep(t, mustStep(t, "http", "url: "+srv.URL+"/hook\nmethod: post\nallow_private: true\njson: {a: '{{event.missing}}'}", 0), stepEnv(t, event))
	if err == nil || !strings.Contains(err.Error(), "json.a") {
		t.Errorf("missing value: err %v, result %v", err, res.Fields)
	}
	mu.Lock()
	if gotBody != nil {
		t.Errorf("a request was sent: %s", gotBody)
	}
	mu.Unlock()
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
