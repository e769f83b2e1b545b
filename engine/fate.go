package engine

import (
	"fmt"
	"slices"
	"strings"
)

// EventFate is what became of an event once it was dispatched, stored
// with it (Event.Fate, Store.SetEventFate) and kept as long as it is:
// `hookd emit`, `hookd events`, GET /v1/events and the dashboard say it,
// so that an event that ran nothing says why.
type EventFate struct {
	// Unheard: no hook listens to the event's type. Nearest are the
	// patterns hooks listen to nearest to it (NearestTypes): what the
	// type may have meant.
	Unheard bool     `json:"unheard,omitempty"`
	Nearest []string `json:"nearest,omitempty"`
	// Rejected are the hooks listening to its type whose where: rejected
	// its payload, sorted.
	Rejected []string `json:"rejected,omitempty"`
	// ClaimedBy is the event:claim handler that claimed it; a claimed
	// event is not dispatched to hooks.
	ClaimedBy string `json:"claimed_by,omitempty"`
	// ClaimReason is the reason the claiming handler gave: with ClaimedBy,
	// what Ethos' fireClaiming returned ({handled: true, reason}).
	ClaimReason string `json:"claim_reason,omitempty"`
	// Runs are the runs it started or queued, then the records of the
	// triggers a gate refused (Gate set), each by id: the run's record
	// says the rest.
	Runs []FateRun `json:"runs,omitempty"`
}

// FateRun is a run an event started or queued, or the record a gate's
// refusal left (Gate set).
type FateRun struct {
	ID   string `json:"id"`
	Hook string `json:"hook"`
	Gate string `json:"gate,omitempty"`
}

// Started counts the runs the event started or queued, and refused the
// triggers gates refused.
func (f *EventFate) Started() (started, refused int) {
	for _, r := range f.Runs {
		if r.Gate == "" {
			started++
		} else {
			refused++
		}
	}
	return started, refused
}

// Text says the fate in one line, for an event of type typ: "claimed by
// handler H", "no hook listens to TYPE (hooks listen to A, B)", or the
// count of its runs (EmitCount) and "rejected by where: of hooks A, B"
// when where: rejected some.
func (f *EventFate) Text(typ string) string {
	switch {
	case f.ClaimedBy != "" && f.ClaimReason != "":
		return "claimed by handler " + f.ClaimedBy + ": " + f.ClaimReason
	case f.ClaimedBy != "":
		return "claimed by handler " + f.ClaimedBy
	case f.Unheard:
		s := "no hook listens to " + typ
		if len(f.Nearest) > 0 {
			s += " (hooks listen to " + strings.Join(f.Nearest, ", ") + ")"
		}
		return s
	}
	started, refused := f.Started()
	var parts []string
	if started > 0 || refused > 0 || len(f.Rejected) == 0 {
		parts = append(parts, EmitCount(started, refused))
	}
	if len(f.Rejected) > 0 {
		parts = append(parts, "rejected by where: of "+hooksText(f.Rejected))
	}
	return strings.Join(parts, "; ")
}

func hooksText(names []string) string {
	if len(names) == 1 {
		return "hook " + names[0]
	}
	return "hooks " + strings.Join(names, ", ")
}

// nearestMax is how many patterns NearestTypes returns at most.
const nearestMax = 3

// NearestTypes returns the patterns nearest to the event type typ by edit
// distance, nearest first (then by name), at most three: those within a
// third of typ's length, and never farther than 2 for a short one. An
// event no hook listens to names them.
func NearestTypes(typ string, patterns []string) []string {
	limit := max(2, len([]rune(typ))/3)
	type near struct {
		p string
		d int
	}
	var ns []near
	for _, p := range patterns {
		if d := editDistance(typ, p); d <= limit {
			ns = append(ns, near{p, d})
		}
	}
	slices.SortFunc(ns, func(a, b near) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.p, b.p)
	})
	out := make([]string, 0, min(len(ns), nearestMax))
	for _, n := range ns[:min(len(ns), nearestMax)] {
		out = append(out, n.p)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// whereText says a hook's where: as its file has it: the condition's
// source, or the payload filters.
func whereText(h *Hook) string {
	if c := h.Trigger.WhereIf; c != nil {
		return c.Source
	}
	keys := make([]string, 0, len(h.Trigger.Where))
	for k := range h.Trigger.Where {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %v", k, h.Trigger.Where[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
