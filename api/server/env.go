package server

import (
	"net/http"
	"os"

	"github.com/hookd/hookd/api"
)

// env answers GET /v1/env: the names of the variables set in the
// daemon's environment — the one its model calls read (HOOKD_MODEL, the
// key's variable) — never their values, for hookd validate.
func (a *Server) env(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.EnvNamesOf(os.Environ()))
}
