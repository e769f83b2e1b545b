package tools

import (
	"bytes"
	"context"
	"fmt"
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

// Limits of http_get.
const (
	httpTimeout   = 30 * time.Second
	httpMaxBody   = 64 << 10
	httpRedirects = netguard.DefaultMaxRedirects
)

// httpClient is shared by every http_get call: its dialer refuses
// loopback, private, link-local and cloud metadata addresses.
var httpClient = netguard.GuardedClient(false, httpTimeout, httpRedirects)

func init() {
	register("http_get",
		"Fetch a public http(s) URL and return the status, the content type and the body (text, up to 64 KiB). "+
			"Addresses on private networks, loopback and cloud metadata are refused.",
		`{"type":"object","properties":{
			"url":{"type":"string","description":"http or https URL"},
			"headers":{"type":"object","additionalProperties":{"type":"string"},"description":"extra request headers"}
		},"required":["url"],"additionalProperties":false}`,
		httpGet)
}

type httpArgs struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

func httpGet(ctx context.Context, env *engine.ToolEnv, a *httpArgs) (string, error) {
	u, err := url.Parse(a.URL)
	if err != nil {
		return "", fmt.Errorf("url: %w", err)
	}
	if err := netguard.CheckURL(u); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("User-Agent", "hookd")
	keys := make([]string, 0, len(a.Headers))
	for k := range a.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		req.Header.Set(k, a.Headers[k])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("get %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	// Redacted before it is cut, so that a secret across the cut is
	// replaced whole.
	body, truncated, err := process.ReadHead(resp.Body, httpMaxBody, env.Redactor)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", u.Redacted(), err)
	}
	ctype := resp.Header.Get("Content-Type")
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s\n", resp.Status)
	if ctype != "" {
		fmt.Fprintf(&b, "content-type: %s\n", ctype)
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		fmt.Fprintf(&b, "location: %s\n", loc)
	}
	b.WriteByte('\n')
	if !isText(ctype, body) {
		fmt.Fprintf(&b, "[hookd: binary body, %d bytes, not shown]", len(body))
		return b.String(), nil
	}
	b.Write(bytes.ToValidUTF8(body, []byte("\uFFFD")))
	if truncated {
		fmt.Fprintf(&b, "\n[hookd: body cut at %d bytes]", httpMaxBody)
	}
	return b.String(), nil
}

// isText reports whether a body can be shown to a model.
func isText(ctype string, body []byte) bool {
	if mt, _, err := mime.ParseMediaType(ctype); err == nil {
		switch {
		case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "json"), strings.HasSuffix(mt, "xml"),
			strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"), mt == "application/javascript",
			mt == "application/x-yaml", mt == "application/yaml":
			return true
		}
	}
	return bytes.IndexByte(body[:min(len(body), binarySample)], 0) < 0
}
