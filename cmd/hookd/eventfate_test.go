package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
)

// fateHooks: two hooks listen to deploy.finished, each with a where: (a
// payload filter, a condition); one to deploy.started; an event:claim
// handler claims events whose payload says "mine".
var fateHooks = map[string]string{
	"prod.yaml":   "trigger: {event: deploy.finished, where: {env: prod}}\nskip_llm: true\nsteps:\n  - type: shell\n    command: \"true\"\n",
	"big.yaml":    "trigger: {event: deploy.finished, where: 'event.n > 5'}\nskip_llm: true\nsteps:\n  - type: shell\n    command: \"true\"\n",
	"audit.yaml":  "trigger: {event: deploy.started}\nskip_llm: true\nsteps:\n  - type: shell\n    command: \"true\"\n",
	"router.yaml": "on: event:claim\nlabel: router\ncommand: [sh, -c, \"grep -q mine && exit 2; exit 0\"]\n",
}

// TestEmitSaysFate: `hookd emit` says what became of an event that ran
// nothing, with a daemon and without one: no hook listens to a misspelt
// type (naming the nearest types hooks listen to), the hooks whose where:
// rejected it, the handler that claimed it. `hookd events` and GET
// /v1/events show the same, kept with the event. Before, emit printed
// "0 run(s)" for all three, and the event's record said nothing.
func TestEmitSaysFate(t *testing.T) {
	for _, daemon := range []bool{true, false} {
		name := "daemonless"
		if daemon {
			name = "daemon"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "", fateHooks)
			if daemon {
				e.serve()
			}
			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"deploy.finishd"}, ": no hook listens to deploy.finishd (hooks listen to deploy.finished)\n"},
				{[]string{"deploy.finished", "env=dev", "--data", `{"n": 1}`}, ": rejected by where: of hooks big, prod\n"},
				{[]string{"deploy.finished", "env=dev", "--id", "ev-9", "--data", `{"n": 9}`}, ": 1 run(s); rejected by where: of hook prod\n"},
				{[]string{"deploy.finished", "who=mine"}, ": claimed by handler router\n"},
			} {
				r := e.must(0, append([]string{"emit"}, c.args...)...)
				if !strings.Contains(r.stdout, c.want) {
					t.Errorf("hookd emit %s:\n%s\nwant %q", strings.Join(c.args, " "), r, c.want)
				}
			}

			r := e.must(0, "events")
			for _, want := range []string{
				"no hook listens to deploy.finishd (hooks listen to deploy.finished)",
				"rejected by where: of hooks big, prod",
				"1 run(s); rejected by where: of hook prod: ",
				"claimed by handler router",
			} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("hookd events lacks %q:\n%s", want, r)
				}
			}
			if strings.Contains(r.stdout, "hook.run.") {
				t.Errorf("hookd events lists hookd's own events without --all:\n%s", r)
			}
			r = e.must(0, "events", "--type", "deploy.finishd", "--json")
			var evs []api.Event
			if err := json.Unmarshal([]byte(r.stdout), &evs); err != nil || len(evs) != 1 {
				t.Fatalf("events --json: %v\n%s", err, r)
			}
			if f := evs[0].Fate; f == nil || !f.Unheard || len(f.Nearest) != 1 || f.Nearest[0] != "deploy.finished" {
				t.Errorf("events --json: fate %+v", evs[0].Fate)
			}
			r = e.must(0, "events", "--type", "deploy.finished", "--limit", "4", "--json")
			evs = nil
			if err := json.Unmarshal([]byte(r.stdout), &evs); err != nil || len(evs) != 3 {
				t.Fatalf("events --type deploy.finished: %v\n%s", err, r)
			}
			if f := evs[1].Fate; f == nil || len(f.Runs) != 1 || f.Runs[0].Hook != "big" || evs[1].ID != "ev-9" {
				t.Errorf("events --json: %s has fate %+v", evs[1].ID, evs[1].Fate)
			}
		})
	}
}

// TestFireEventAppliesWhere: `hookd fire HOOK --event` is judged by the
// hook's where: (refused, exit 75, with the where: it did not match);
// --ignore-where fires it anyway; --force does not (it skips the cooldown
// only); a fire without --event is not judged. Before, --event fired the
// hook whatever its where: said.
func TestFireEventAppliesWhere(t *testing.T) {
	for _, daemon := range []bool{true, false} {
		name := "daemonless"
		if daemon {
			name = "daemon"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "", fateHooks)
			if daemon {
				e.serve()
			}
			for _, args := range [][]string{
				{"fire", "prod", "--event", `{"env":"dev"}`},
				{"fire", "prod", "--event", `{"env":"dev"}`, "--force"},
			} {
				r := e.must(exitRefused, args...)
				want := "hookd fire: refused: where: the event does not match hook prod's where: {env: prod}; --ignore-where fires it anyway"
				if !strings.Contains(r.stderr, want) {
					t.Errorf("%s:\n%s\nwant %q", strings.Join(args, " "), r, want)
				}
			}
			r := e.must(exitRefused, "fire", "big", "--event", `{"n":2}`)
			if !strings.Contains(r.stderr, "hook big's where: event.n > 5;") {
				t.Errorf("fire big:\n%s", r)
			}
			if n := len(e.listRuns("prod")); n != 0 {
				t.Fatalf("refused by where: %d runs of prod, want none", n)
			}
			e.must(2, "fire", "prod", "--ignore-where")
			e.must(0, "fire", "prod", "--event", `{"env":"dev"}`, "--ignore-where", "--wait")
			e.must(0, "fire", "prod", "--wait")
			e.must(0, "fire", "prod", "--event", `{"env":"prod"}`, "--wait", "--force")
			runs := e.listRuns("prod")
			if len(runs) != 3 {
				t.Fatalf("prod: %d runs, want 3", len(runs))
			}
			for _, r := range runs {
				if r.Status != engine.StatusCompleted {
					t.Errorf("prod run %s: %s", r.ID, r.Status)
				}
			}
		})
	}
}
