package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/api"
)

// TestClaimReportedToCaller: the caller of an emit is told the claim, as
// Ethos' fireClaiming returns it ({handled: true, reason}): which handler
// took the event and why, in the answer (fate.claimed_by,
// fate.claim_reason), in hookd emit's line and in hookd events, through
// the daemon's API and without a daemon. The handler claims Ethos'
// gateway_message shape ({platform, chatId, text}) for one platform.
func TestClaimReportedToCaller(t *testing.T) {
	hooks := map[string]string{
		"router.yaml": `on: event:claim
label: support-router
command: [sh, -c, "grep -q '\"platform\":\"telegram\"' && echo '{\"decision\": \"claim\", \"reason\": \"routed to the support bot\"}'; exit 0"]
`,
		"reply.yaml": "trigger: {event: gateway.message}\nskip_llm: true\nsteps:\n  - type: shell\n    command: \"true\"\n",
	}
	for _, daemon := range []bool{true, false} {
		name := "daemonless"
		if daemon {
			name = "daemon"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "", hooks)
			if daemon {
				e.serve()
			}
			r := e.must(0, "emit", "gateway.message", "--json", "--data", `{"platform":"telegram","chatId":"42","text":"help","isDm":true}`)
			var ans api.EmitAnswer
			if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
				t.Fatalf("emit --json: %v\n%s", err, r)
			}
			if f := ans.Fate; f == nil || f.ClaimedBy != "support-router" || f.ClaimReason != "routed to the support bot" || len(ans.Runs) != 0 {
				t.Errorf("the answer does not carry the claim: fate %+v, runs %d\n%s", ans.Fate, len(ans.Runs), r)
			}
			r = e.must(0, "emit", "gateway.message", "platform=telegram", "text=again")
			if !strings.Contains(r.stdout, "claimed by handler support-router: routed to the support bot") {
				t.Errorf("hookd emit does not say the claim and its reason:\n%s", r)
			}
			r = e.must(0, "emit", "gateway.message", "--json", "platform=slack", "text=hi")
			ans = api.EmitAnswer{}
			if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
				t.Fatalf("emit --json: %v\n%s", err, r)
			}
			if len(ans.Runs) != 1 || ans.Fate == nil || ans.Fate.ClaimedBy != "" {
				t.Errorf("an event the handler does not claim goes to the hook: runs %d, fate %+v", len(ans.Runs), ans.Fate)
			}
			if r := e.must(0, "events"); !strings.Contains(r.stdout, "claimed by handler support-router: routed to the support bot") {
				t.Errorf("hookd events does not keep the claim's reason:\n%s", r)
			}
		})
	}
}
