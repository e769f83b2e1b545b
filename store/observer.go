package store

import (
	"sync/atomic"

	"github.com/hookd/hookd/engine"
)

// Observer holds the engine.StoreObserver a store tells of its writes.
// Both stores keep one (store/postgres too), so they tell alike. The zero
// Observer tells no one.
type Observer struct {
	o atomic.Pointer[engine.StoreObserver]
}

// Set replaces what is told (Store.Observe).
func (ob *Observer) Set(o engine.StoreObserver) { ob.o.Store(&o) }

// EventsStored tells the observer that a write of events returned.
func (ob *Observer) EventsStored() {
	if o := ob.o.Load(); o != nil && o.EventsStored != nil {
		o.EventsStored()
	}
}
