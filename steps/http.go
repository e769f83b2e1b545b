package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/netguard"
	"github.com/hookd/hookd/process"
)

// Defaults of the http step.
const (
	DefaultHTTPTimeout = 30 * time.Second
	DefaultMaxBody     = 256 << 10
)

func init() {
	engine.RegisterStep("http", engine.DeclaredKind{Build: newHTTP,
		Fields: []string{"body", "status_code", "status", "headers", "url", "method", "truncated", "duration_ms"}})
}

type httpConfig struct {
	Method       string            `yaml:"method"`
	URL          string            `yaml:"url"`
	Headers      map[string]string `yaml:"headers"`
	Body         string            `yaml:"body"`
	JSON         any               `yaml:"json"`
	MaxBody      int               `yaml:"max_body"`
	AllowPrivate bool              `yaml:"allow_private"`
	MaxRedirects *int              `yaml:"max_redirects"`
}

// httpStep makes one HTTP request through the network guard.
type httpStep struct {
	def      *engine.StepDef
	method   string
	url      string
	headers  []envVar // sorted by name; values may hold placeholders
	body     string
	jsonBody bool // the Content-Type header is JSON: placeholders in body are JSON-escaped
	formBody bool // it is a form (x-www-form-urlencoded): placeholders in body are percent-encoded
	// json is the json: field, a structure hookd encodes as the body (its
	// string leaves may hold placeholders); nil without one.
	json    any
	maxBody int
	client  *http.Client
}

func newHTTP(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c httpConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	s := &httpStep{def: def, method: strings.ToUpper(c.Method), url: c.URL, body: c.Body, maxBody: c.MaxBody}
	if s.method == "" {
		s.method = http.MethodGet
	}
	if !validToken(s.method) {
		return nil, fieldErr(cfg, "method", "%q is not a valid HTTP method", c.Method)
	}
	if strings.TrimSpace(c.URL) == "" {
		return nil, fieldErr(cfg, "url", "required")
	}
	phs, err := engine.ParsePlaceholders(c.URL)
	if err != nil {
		return nil, fieldErr(cfg, "url", "%v", err)
	}
	// The scheme must be written out, so that an event cannot turn the
	// request into something else; the rest is checked after expansion.
	i := strings.Index(c.URL, "://")
	if scheme := strings.ToLower(c.URL[:max(i, 0)]); i < 0 || (scheme != "http" && scheme != "https") ||
		len(phs) > 0 && phs[0].Start < i+3 {
		return nil, fieldErr(cfg, "url", "must start with http:// or https://, written out (got %q)", c.URL)
	}
	if len(phs) == 0 {
		u, err := url.Parse(c.URL)
		if err != nil {
			return nil, fieldErr(cfg, "url", "%v", err)
		}
		if err := netguard.CheckURL(u); err != nil {
			return nil, fieldErr(cfg, "url", "%v", err)
		}
	}
	names := make([]string, 0, len(c.Headers))
	for name := range c.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := c.Headers[name]
		if !validToken(name) {
			return nil, fieldErr(cfg, "headers."+name, "%q is not a valid header name", name)
		}
		if _, err := engine.ParsePlaceholders(v); err != nil {
			return nil, fieldErr(cfg, "headers."+name, "%v", err)
		}
		s.headers = append(s.headers, envVar{name, v})
		if strings.EqualFold(name, "Content-Type") {
			s.jsonBody = s.jsonBody || isJSONMedia(v)
			s.formBody = s.formBody || isFormMedia(v)
		}
	}
	bodyPhs, err := engine.ParsePlaceholders(c.Body)
	if err != nil {
		return nil, fieldErr(cfg, "body", "%v", err)
	}
	if s.jsonBody {
		if err := checkJSONBodyPlaces(c.Body, bodyPhs); err != nil {
			return nil, fieldErr(cfg, "body", "%v", err)
		}
	}
	if c.JSON != nil {
		if err := s.setJSON(cfg, c); err != nil {
			return nil, err
		}
	}
	if c.MaxBody < 0 {
		return nil, fieldErr(cfg, "max_body", "must be > 0 (got %d)", c.MaxBody)
	}
	if s.maxBody == 0 {
		s.maxBody = DefaultMaxBody
	}
	redirects := netguard.DefaultMaxRedirects
	if c.MaxRedirects != nil {
		if *c.MaxRedirects < 0 {
			return nil, fieldErr(cfg, "max_redirects", "must be >= 0 (got %d)", *c.MaxRedirects)
		}
		redirects = *c.MaxRedirects
	}
	timeout := def.Timeout
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	s.client = netguard.GuardedClient(c.AllowPrivate, timeout, redirects)
	return s, nil
}

// Templates returns the strings of the step that may hold placeholders.
func (s *httpStep) Templates() []string {
	out := []string{s.url}
	for _, h := range s.headers {
		out = append(out, h.tmpl)
	}
	out = append(out, s.body)
	walkStrings(s.json, "json", func(_, str string) { out = append(out, str) })
	return out
}

// Run sends the request. Any status is a result; a refused address, a
// failed connection, a timeout and an unresolved placeholder are errors.
func (s *httpStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.def, map[string]any{
		"body": "", "status": "", "headers": map[string]any{}, "url": "", "method": s.method,
	})
	scope := scopeOf(env)
	raw, err := expandURL(s.url, scope)
	if err != nil {
		return fail(res, fmt.Errorf("url: %w", err))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fail(res, fmt.Errorf("url: %w", err))
	}
	if err := netguard.CheckURL(u); err != nil {
		return fail(res, fmt.Errorf("url: %w", err))
	}
	res.Fields["url"] = u.Redacted()
	var bodyEscape func(engine.Placeholder, string) string
	switch {
	case s.jsonBody:
		bodyEscape = escapeJSON
	case s.formBody:
		bodyEscape = escapeForm
	}
	body, err := engine.ExpandEscaped(s.body, scope, bodyEscape)
	if err != nil {
		return fail(res, fmt.Errorf("body: %w", err))
	}
	if s.json != nil {
		if body, err = encodeJSONBody(s.json, scope); err != nil {
			return fail(res, err)
		}
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, s.method, u.String(), rd)
	if err != nil {
		return fail(res, fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("User-Agent", "hookd")
	for _, h := range s.headers {
		v, err := engine.Expand(h.tmpl, scope, nil)
		if err != nil {
			return fail(res, fmt.Errorf("headers.%s: %w", h.name, err))
		}
		if !validHeaderValue(v) {
			return fail(res, fmt.Errorf("headers.%s: the value holds a control character (a newline?), which a header cannot carry", h.name))
		}
		if strings.EqualFold(h.name, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(h.name, v)
	}

	defer s.client.CloseIdleConnections() // runs are minutes apart: keep nothing open
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ue.Timeout() {
			return fail(res, fmt.Errorf("%s %s: timed out: %w", s.method, u.Redacted(), err))
		}
		return fail(res, err)
	}
	defer resp.Body.Close()
	data, cut, err := process.ReadHead(resp.Body, s.maxBody, env.Redactor)
	res.StatusCode = resp.StatusCode
	res.Fields["status"] = resp.Status
	res.Fields["url"] = resp.Request.URL.Redacted()
	hdr := make(map[string]any, len(resp.Header))
	for k, vs := range resp.Header {
		hdr[k] = strings.Join(vs, ", ")
	}
	res.Fields["headers"] = hdr
	if err != nil {
		return fail(res, fmt.Errorf("read response body: %w", err))
	}
	text := string(data)
	if cut {
		if resp.ContentLength > 0 {
			text += fmt.Sprintf("\n[hookd: body truncated after %d of %d bytes]", len(text), resp.ContentLength)
		} else {
			text += fmt.Sprintf("\n[hookd: body truncated after %d bytes]", len(text))
		}
		res.Truncated = true
	}
	res.Output = text
	res.Fields["body"] = text
	return done(res)
}

// validToken reports whether s is an HTTP token (RFC 9110), as a method or
// a header name must be.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether s can be sent as a header value: no
// control characters but tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// isJSONMedia reports whether a Content-Type value names JSON
// (application/json, application/problem+json ...).
func isJSONMedia(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// isFormMedia reports whether a Content-Type value names an HTML form's
// encoding, application/x-www-form-urlencoded.
func isFormMedia(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && mt == "application/x-www-form-urlencoded"
}

// escapeForm percent-encodes a placeholder's value for a form body
// (name={{x}}&...): the value cannot add a field (& and = are encoded),
// unless its last filter is urlquery, which encoded it already.
func escapeForm(ph engine.Placeholder, v string) string {
	if ph.LastFilter() == "urlquery" {
		return v
	}
	return url.QueryEscape(v)
}

// escapeJSON escapes a placeholder's value for the inside of a JSON
// string in a JSON body (the author writes the quotes: "text":
// "{{x}}"), unless its last filter is json, which wrote a whole literal.
func escapeJSON(ph engine.Placeholder, v string) string {
	if ph.LastFilter() == "json" {
		return v
	}
	return engine.JSONEscape(v)
}

// expandURL expands the placeholders of a URL template, each
// percent-encoded for where it stands: a path segment or the fragment
// (url.PathEscape: a value cannot add a segment), the query
// (url.QueryEscape: a value cannot add a parameter); one whose last
// filter is urlquery is left as that filter wrote it. Where each part
// begins is read from the hook's text outside the placeholders (a "?" or
// "#" in a default filter's text is not the query). A value in the
// authority (host and port) is inserted as it is, and CheckURL judges the
// result, but it may hold nothing that ends the host or moves it: no "/",
// "?", "#", "@", "\\", white space or control character, and no ":" (a
// port) unless the value stands for the whole host (https://{{x}}/).
func expandURL(tmpl string, scope *engine.Scope) (string, error) {
	phs, err := engine.ParsePlaceholders(tmpl)
	if err != nil {
		return "", err
	}
	masked := []byte(tmpl) // the hook's own text, placeholders blanked
	for _, ph := range phs {
		for i := ph.Start; i < ph.End; i++ {
			masked[i] = 'x'
		}
	}
	auth := strings.Index(tmpl, "://") + 3
	pathAt := len(tmpl)
	if i := bytes.IndexAny(masked[auth:], "/?#"); i >= 0 {
		pathAt = auth + i
	}
	query, frag := bytes.IndexByte(masked, '?'), bytes.IndexByte(masked, '#')
	var bad error
	raw, err := engine.ExpandEscaped(tmpl, scope, func(ph engine.Placeholder, v string) string {
		switch {
		case ph.Start < pathAt:
			if c, ok := hostBreak(v, ph.Start == auth && ph.End == pathAt); ok && bad == nil {
				bad = fmt.Errorf("{{%s}}: the value holds %q, which would end or move the host the hook wrote", ph.Path, c)
			}
			return v
		case ph.LastFilter() == "urlquery":
			return v
		case query >= 0 && ph.Start > query && (frag < 0 || ph.Start < frag):
			return url.QueryEscape(v)
		}
		return url.PathEscape(v)
	})
	if err != nil {
		return "", err
	}
	if bad != nil {
		return "", bad
	}
	// url.PathEscape leaves "." and "..", and a server that decodes %2F
	// or %5C before it cleans the path reads "../x" as a climb: a value
	// may add no dot segment to the path the hook wrote.
	written, err := engine.ExpandEscaped(tmpl, scope, func(engine.Placeholder, string) string { return "x" })
	if err != nil {
		return "", err
	}
	if dotSegments(raw) > dotSegments(written) {
		return "", errors.New(`a value makes a "." or ".." segment of the path: it would climb out of the path the hook wrote (path traversal)`)
	}
	return raw, nil
}

// hostBreak returns the first character of v that would end a URL's
// authority or change what it names, where v stands in the authority: a
// port's ":" is allowed only when v stands for the whole host (wholeHost).
func hostBreak(v string, wholeHost bool) (rune, bool) {
	for _, c := range v {
		if c <= ' ' || c == 0x7f || strings.ContainsRune("/?#@\\", c) || c == ':' && !wholeHost {
			return c, true
		}
	}
	return 0, false
}

// dotSegments counts the "." and ".." segments of a URL's path, and
// those a segment holds once percent-decoded again (..%2F.. sent as
// ..%252F..), with \ read as / as some servers do.
func dotSegments(raw string) int {
	u, err := url.Parse(raw)
	if err != nil {
		return 0 // the caller refuses the URL
	}
	sep := func(r rune) bool { return r == '/' || r == '\\' }
	n := 0
	for _, seg := range strings.FieldsFunc(u.Path, sep) {
		parts := []string{seg}
		if d, err := url.PathUnescape(seg); err == nil && d != seg {
			parts = append(parts, strings.FieldsFunc(d, sep)...)
		}
		for _, p := range parts {
			if p == "." || p == ".." {
				n++
			}
		}
	}
	return n
}
