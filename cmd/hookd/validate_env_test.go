package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/api/client"
	"github.com/hookd/hookd/engine"
)

// TestValidateAsksTheRunningDaemon: with no daemon, validate checks what
// a hook needs of the environment (a model) against this shell's and
// says so; with a daemon running, against the daemon's, which it asks
// for the names of its variables (GET /v1/env: names, never values), and
// says so — whatever this shell has.
func TestValidateAsksTheRunningDaemon(t *testing.T) {
	e := newEnv(t, "", map[string]string{"ask.yaml": "prompt: what now?\n"})
	// This shell names a model; the daemon, in this test's process whose
	// environment has no HOOKD_MODEL (TestMain), does not.
	if _, ok := os.LookupEnv(engine.EnvModel); ok {
		t.Fatalf("%s is set in the test's environment", engine.EnvModel)
	}
	shell := func() host {
		return host{dir: e.dir, stdin: strings.NewReader(""), getenv: func(k string) string {
			if k == engine.EnvModel {
				return "m"
			}
			return os.Getenv(k)
		}}
	}
	r := runHost(shell(), "validate")
	if r.code != exitOK || !strings.Contains(r.stdout, "checked against this shell's environment") {
		t.Errorf("validate without a daemon, a model in this shell:\n%s", r)
	}

	e.serve()
	r = runHost(shell(), "validate")
	want := "HOOKD_MODEL is not set in the running daemon's environment"
	if r.code != exitError || !strings.Contains(r.stderr, want) || !strings.Contains(r.stdout, "checked against the running daemon's environment") {
		t.Errorf("validate with a daemon that has no model, want exit 1 and %q:\n%s", want, r)
	}
	r = runHost(shell(), "validate", "--json")
	var out struct {
		Environment string `json:"environment"`
		Valid       bool   `json:"valid"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Valid || out.Environment != "the running daemon's environment" {
		t.Errorf("validate --json with a daemon: %v %+v\n%s", err, out, r)
	}

	// The daemon tells the names of its variables, never their values.
	cl := client.Dial(e.path(".hookd/hookd.db"))
	if cl == nil {
		t.Fatal("the daemon does not answer on its socket")
	}
	body, err := cl.Get(context.Background(), "/v1/env")
	if err != nil {
		t.Fatal(err)
	}
	var names api.EnvNames
	if err := json.Unmarshal(body, &names); err != nil {
		t.Fatalf("GET /v1/env: %v\n%s", err, body)
	}
	if !names.Has("PATH") || names.Has(engine.EnvModel) {
		t.Errorf("GET /v1/env: PATH missing or HOOKD_MODEL there: %s", body)
	}
	if path := os.Getenv("PATH"); path == "" || strings.Contains(string(body), path) {
		t.Errorf("GET /v1/env tells a value (PATH's):\n%s", body)
	}
}
