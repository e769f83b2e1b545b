package main

import (
	"errors"
	"time"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
)

// The JSON that validate and next print with --json (docs/api.md, "CLI
// JSON"). fire prints a run as GET /v1/runs/{id} does, emit the answer of
// POST /v1/events.

// validateJSON is `hookd validate --json`.
type validateJSON struct {
	Dir      string          `json:"dir"`
	Valid    bool            `json:"valid"`
	Hooks    []string        `json:"hooks"`    // names of the hooks that loaded
	Handlers int             `json:"handlers"` // lifecycle handlers that loaded
	Errors   []loadErrorJSON `json:"errors"`
	// Warnings are about hooks that load but will not work as written
	// here, or likely not as meant; they do not make the hooks invalid.
	Warnings []loadErrorJSON `json:"warnings"`
	// Environment names the environment what hooks need of it (a model,
	// its key) was checked against: the running daemon's, or this shell's.
	Environment string `json:"environment"`
}

// loadErrorJSON is one problem in a file: where, and what.
type loadErrorJSON struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	Text    string `json:"text"` // as validate prints it: file:line: field: message
}

func loadErrorOf(err error) loadErrorJSON {
	out := loadErrorJSON{Message: err.Error(), Text: err.Error()}
	if ce, ok := errors.AsType[*config.Error](err); ok {
		out.File, out.Line, out.Field, out.Message = ce.File, ce.Line, ce.Field, ce.Msg
		if out.Message == "" && ce.Err != nil {
			out.Message = ce.Err.Error()
		}
	}
	return out
}

// nextJSON is `hookd next --json`.
type nextJSON struct {
	Hook     string      `json:"hook"`
	Trigger  string      `json:"trigger"`
	Timezone string      `json:"timezone"` // the schedule's (IANA name, or Local)
	Times    []time.Time `json:"times"`    // RFC 3339 in the schedule's zone; [] when it has no (further) fire time
}

func nextOf(h *engine.Hook, times []time.Time, loc *time.Location) nextJSON {
	out := nextJSON{Hook: h.Name, Trigger: h.Trigger.String(), Timezone: loc.String(), Times: []time.Time{}}
	for _, t := range times {
		out.Times = append(out.Times, t.In(loc))
	}
	return out
}
