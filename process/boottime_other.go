//go:build !linux

package process

// bootTick is unknown without Linux's CLOCK_BOOTTIME (and /proc): a group
// is recorded with the /proc read, which fails, and is never reaped.
func bootTick() (uint64, bool) { return 0, false }
