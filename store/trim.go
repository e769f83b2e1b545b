package store

import (
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/engine"
)

// Trimming the C heap after large runs. glibc's malloc returns to the
// system on its own only the top of an arena: the megabyte outputs
// SQLite copies, reads back and indexes leave free space between blocks
// still in use, which stays resident. In a soak of 1 MB outputs
// (BenchmarkStoreSoak) glibc held 55-75 MB of which 10-30 MB were
// allocated, and the process peaked at 130-137 MB; with the free pages
// given back (malloc_trim) once a second, 95 MB. So the write of a run
// whose steps printed trimAfter bytes or more is followed by a trim, at
// most one every trimEvery: never when idle, nothing for small runs. A
// trim costs a walk of the arenas' free lists; where the C library is
// not glibc it does nothing (malloc_other.go).
const (
	trimAfter = 256 << 10
	trimEvery = time.Second
)

// trimmer is when the C heap may next be trimmed, and how many times it
// was.
type trimmer struct {
	next  atomic.Int64 // on sinceOpen, in nanoseconds; 0: at once
	count atomic.Int64
}

// afterRunWrite trims the C heap if r's output is large and the last
// trim is trimEvery old.
func (d *DB) afterRunWrite(r *engine.Run) {
	n := 0
	for _, s := range r.Steps {
		if s != nil {
			n += len(s.Output)
		}
	}
	if n < trimAfter {
		return
	}
	now, next := int64(d.sinceOpen()), d.tr.next.Load()
	if now < next || !d.tr.next.CompareAndSwap(next, now+int64(trimEvery)) {
		return
	}
	trimCHeap()
	d.tr.count.Add(1)
}
