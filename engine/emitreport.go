package engine

import (
	"fmt"
	"strings"
)

// The words in which hookd reports what an emitted event did to each
// hook it matched: `hookd emit` (in the process or through the API's
// answer), the emit step's output and the emit_event tool's result say
// them alike, so a person and a model are told the same.

// EmittedElsewhere says what became of an event emitted on a cluster
// node that does not schedule (Emitted.Elsewhere).
const EmittedElsewhere = "stored for the cluster's scheduler (another node), which dispatches it; the runs it starts are not known here"

// RefusedText is how hookd says that a gate refused a trigger, given the
// refusal (a GateError's text).
func RefusedText(refusal string) string { return "refused: " + refusal }

// RunLine says a run an event started or queued: "RUN HOOK (running)",
// or "RUN HOOK (queued: WHY)" when it waits for a slot.
func RunLine(r *Run) string {
	if r.Status == StatusQueued && r.Reason != "" {
		return fmt.Sprintf("%s %s (%s)", r.ID, r.Hook, QueuedText(r.Reason))
	}
	return fmt.Sprintf("%s %s (%s)", r.ID, r.Hook, r.Status)
}

// QueuedText says why a queued run waits, given its Reason: the gates
// write "queued: WHY" (a concurrency slot) or "pending: WHY" (the run in
// flight before it), which is said as it is; any other reason gets
// "queued: " in front, so the word is said once.
func QueuedText(reason string) string {
	if strings.HasPrefix(reason, "queued: ") || strings.HasPrefix(reason, "pending: ") {
		return reason
	}
	return "queued: " + reason
}

// RefusedLine says a matching hook a gate refused: "RUN HOOK refused:
// REFUSAL", RUN being the record the refusal left.
func RefusedLine(runID, hook, refusal string) string {
	return fmt.Sprintf("%s %s %s", runID, hook, RefusedText(refusal))
}

// EmitCount counts an emit's fates: "N run(s)", and ", M refused by a
// gate" when gates refused some.
func EmitCount(runs, refused int) string {
	s := fmt.Sprintf("%d run(s)", runs)
	if refused > 0 {
		s += fmt.Sprintf(", %d refused by a gate", refused)
	}
	return s
}

// Count says what em did with the event of type typ: its fate's text
// (EventFate.Text: the runs, the hooks where: rejected, the handler that
// claimed it, or that no hook listens to it), else EmitCount of em.
func (em *Emitted) Count(typ string) string {
	if em.Fate != nil {
		return em.Fate.Text(typ)
	}
	return EmitCount(len(em.Runs), len(em.Refused))
}

// Lines says, one line a hook, what em did to each hook it matched: the
// runs (RunLine), then the refusals (RefusedLine).
func (em *Emitted) Lines() []string {
	out := make([]string, 0, len(em.Runs)+len(em.Refused))
	for _, r := range em.Runs {
		out = append(out, RunLine(r))
	}
	for _, r := range em.Refused {
		out = append(out, RefusedLine(r.Run.ID, r.Run.Hook, r.Gate.Error()))
	}
	return out
}
