package engine

import (
	"hash/fnv"
	"time"
)

// dueAt is when h fires for slot: the slot plus its jitter.
func dueAt(h *Hook, slot time.Time) time.Time {
	return slot.Add(jitterOffset(h.Name, slot, h.Trigger.Schedule.Next(slot), h.Trigger.Jitter))
}

// jitterOffset returns the deterministic delay of a hook's slot: a hash of
// the hook name and the slot, below max and below the gap to the next
// slot, so a jittered run never passes the next slot.
func jitterOffset(hook string, slot, next time.Time, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	if !next.IsZero() {
		if gap := next.Sub(slot); gap < max {
			max = gap
		}
	}
	if max <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(hook))
	var b [8]byte
	n := uint64(slot.UnixNano())
	for i := range b {
		b[i] = byte(n >> (8 * i))
	}
	h.Write(b[:])
	return time.Duration(h.Sum64() % uint64(max))
}

// maxSlotScan bounds how many slots missedSlots walks; a schedule of one
// slot a second missed for a year stays cheap to reason about.
const maxSlotScan = 1_000_000

// missedSlots walks the slots in (after, upto] and returns the last keep of
// them (oldest first) and how many there were. The walk starts no earlier
// than a year before upto.
func missedSlots(s Schedule, after, upto time.Time, keep int) (last []time.Time, total int) {
	if floor := upto.AddDate(-1, 0, 0); after.Before(floor) {
		after = floor
	}
	for t := s.Next(after); !t.IsZero() && !t.After(upto); t = s.Next(t) {
		total++
		if keep > 0 {
			if len(last) == keep {
				copy(last, last[1:])
				last = last[:keep-1]
			}
			last = append(last, t)
		}
		if total >= maxSlotScan {
			break
		}
	}
	return last, total
}
