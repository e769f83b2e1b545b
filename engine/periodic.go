package engine

import (
	"maps"
	"time"
)

// periodicPayload is the event payload of a periodic hook's run, with
// agent-queue's field names: current_time and current_time_epoch (when
// the run was triggered), last_run_time, last_run_time_epoch and
// seconds_since_last_run (the previous start; absent on a first run).
// hookd adds trigger (schedule, catchup, manual) and, for a scheduled or
// caught-up run, slot (the slot it fills). Times are RFC 3339 in UTC,
// epochs whole seconds.
func periodicPayload(trigger string, now, slot, last time.Time) map[string]any {
	data := map[string]any{
		"trigger":            trigger,
		"current_time":       now.UTC().Format(time.RFC3339),
		"current_time_epoch": now.Unix(),
	}
	if !slot.IsZero() {
		data["slot"] = slot.Format(time.RFC3339)
	}
	if !last.IsZero() {
		data["last_run_time"] = last.UTC().Format(time.RFC3339)
		data["last_run_time_epoch"] = last.Unix()
		data["seconds_since_last_run"] = max(0, int64(now.Sub(last)/time.Second))
	}
	return data
}

// withPeriodic returns the payload of a periodic hook fired by hand (or
// by a tool: trigger says which): the
// fields of periodicPayload, under the ones given (a field given wins).
// Other hooks' payloads are returned as they are.
func withPeriodic(h *Hook, trigger string, given map[string]any, now, last time.Time) map[string]any {
	if !h.Trigger.Periodic() {
		return given
	}
	data := periodicPayload(trigger, now, time.Time{}, last)
	maps.Copy(data, given)
	return data
}
