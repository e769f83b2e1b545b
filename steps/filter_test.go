package steps

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellFilteredValuesStayData runs filtered placeholders through a
// real shell with hostile values: they reach the command as data (the
// filter's output, unparsed), and nothing they spell runs.
func TestShellFilteredValuesStayData(t *testing.T) {
	s := mustShellStep(t, `command: printf '[%s]\n' {{event.v | upper}} "{{event.v | trim | json}}" {{event.v | base64}} {{event.w | default "$(touch pwned3)"}}`, 0)
	hostile := " $(touch pwned1) `touch pwned2`; touch pwned4 "
	env := stepEnv(t, map[string]any{"v": hostile, "w": ""})
	res, err := s.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	want := "[" + strings.ToUpper(hostile) + "]\n" +
		`["$(touch pwned1) ` + "`touch pwned2`" + `; touch pwned4"]` + "\n" +
		"[" + base64.StdEncoding.EncodeToString([]byte(hostile)) + "]\n" +
		"[$(touch pwned3)]\n"
	if res.Output != want {
		t.Errorf("output %q\nwant   %q", res.Output, want)
	}
	if m, _ := filepath.Glob(filepath.Join(env.Workdir, "pwned*")); len(m) > 0 {
		t.Errorf("a filtered value ran: %v", m)
	}
	if m, _ := filepath.Glob(filepath.Join(env.Workdir, "PWNED*")); len(m) > 0 {
		t.Errorf("a filtered value ran: %v", m)
	}
}

// TestHTTPContextEscaping: in a URL a bare placeholder is percent-encoded
// for where it stands, so a value cannot add a path segment or a query
// parameter; in a JSON body it is JSON-escaped, so a value cannot end the
// string and add keys; | json and | urlquery are not encoded twice.
func TestHTTPContextEscaping(t *testing.T) {
	var gotPath, gotRaw, gotBody string
	var gotQuery map[string][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotPath, gotRaw, gotQuery, gotBody = r.URL.Path, r.URL.RawPath, r.URL.Query(), string(b)
	}))
	defer srv.Close()
	event := map[string]any{
		"name":  "sub/admin?x=1#f",
		"q":     "a&admin=1 b",
		"text":  "He said \"hi\",\n\"admin\": true, \"x\": \"",
		"count": float64(3),
	}
	src := "url: '" + srv.URL + "/items/{{event.name}}?q={{event.q}}&r={{event.q | urlquery}}'\n" +
		"method: post\nheaders: {Content-Type: application/json; charset=utf-8}\n" +
		`body: '{"text": "{{event.text}}", "quoted": {{event.text | json}}, "n": {{event.count | json}}, "up": "{{event.q | upper}}"}'` +
		"\nallow_private: true"
	res, err := runStep(t, mustStep(t, "http", src, 0), stepEnv(t, event))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("%v %v", err, res.Fields)
	}
	if gotPath != "/items/sub/admin?x=1#f" || !strings.Contains(gotRaw, "%2F") {
		t.Errorf("path %q (raw %q): the value must stay one segment", gotPath, gotRaw)
	}
	if len(gotQuery) != 2 || gotQuery["q"][0] != "a&admin=1 b" || gotQuery["r"][0] != "a&admin=1 b" {
		t.Errorf("query %v: the value must stay one parameter", gotQuery)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(gotBody), &body); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, gotBody)
	}
	if len(body) != 4 || body["text"] != event["text"] || body["quoted"] != event["text"] || body["n"] != float64(3) ||
		body["up"] != "A&ADMIN=1 B" {
		t.Errorf("body %v", body)
	}
}

// TestHTTPPlainBodyNotEscaped: without a JSON Content-Type a body is
// text, and its placeholders are inserted as they are.
func TestHTTPPlainBodyNotEscaped(t *testing.T) {
	var gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
	}))
	defer srv.Close()
	src := "url: " + srv.URL + "\nmethod: post\nbody: '{{event.msg}}'\nallow_private: true"
	if _, err := runStep(t, mustStep(t, "http", src, 0), stepEnv(t, map[string]any{"msg": `{"a": "b"}`})); err != nil {
		t.Fatal(err)
	}
	if gotBody != `{"a": "b"}` {
		t.Errorf("body %q", gotBody)
	}
}

// TestHTTPFilterErrors: a bad filter is an error of the field at load.
func TestHTTPFilterErrors(t *testing.T) {
	for field, src := range map[string]string{
		"url":             "url: 'https://example.com/{{event.x | nope}}'",
		"body":            "url: https://example.com\nbody: '{{event.x | truncate}}'",
		"headers.X-Count": "url: https://example.com\nheaders: {X-Count: '{{event.x | json 1}}'}",
	} {
		_, err := newStep(t, "http", src, 0)
		if err == nil || !strings.HasPrefix(err.Error(), field+": ") || !strings.Contains(err.Error(), "filter") {
			t.Errorf("%s: %v", field, err)
		}
	}
}
