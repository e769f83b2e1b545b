package server

import (
	"net/http"
	"testing"
)

// TestServerLimits: the API's servers carry read-header and idle limits,
// so a client that sends nothing, or keeps an idle connection, does not
// hold it open; and no write limit, which would cut the event stream and
// /wait short.
func TestServerLimits(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.IdleTimeout <= 0 || srv.WriteTimeout != 0 {
		t.Errorf("API server limits: read header %v, idle %v, write %v", srv.ReadHeaderTimeout, srv.IdleTimeout, srv.WriteTimeout)
	}
}
