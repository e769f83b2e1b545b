package tools

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookd/hookd/redact"
)

// TestHTTPGetSecretAcrossCut: a body that holds a secret across the
// 64 KiB cut gives the model no piece of it.
func TestHTTPGetSecretAcrossCut(t *testing.T) {
	const secret = "s3cr3t-9f8e7d6c5b4a"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p int
		fmt.Sscan(r.URL.Query().Get("p"), &p)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("x", p)+secret+strings.Repeat("y", 100))
	}))
	defer srv.Close()
	saved := httpClient
	httpClient = srv.Client()
	defer func() { httpClient = saved }()
	env, _ := project(t)
	env.Redactor = redact.New([]string{"TOK"}, []string{"TOK=" + secret})
	for p := httpMaxBody - len(secret) + 1; p < httpMaxBody; p += 3 {
		got := mustCall(t, env, "http_get", fmt.Sprintf(`{"url":"%s/?p=%d"}`, srv.URL, p))
		for i := 0; i+4 <= len(secret); i++ {
			if strings.Contains(got, secret[i:i+4]) {
				t.Fatalf("secret at %d: %q in %q", p, secret[i:i+4], got[len(got)-80:])
			}
		}
	}
}
