//go:build linux && cgo

package store

/*
#include <malloc.h>
#include <stdint.h>

// SQLite's own count of the memory it holds (sqlite3.c, linked by
// mattn/go-sqlite3).
extern int64_t sqlite3_memory_used(void);

static void hookd_cmemory(int64_t out[3]) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
	struct mallinfo2 mi = mallinfo2();
	out[0] = (int64_t)(mi.arena + mi.hblkhd);    // from the system: arenas and mapped blocks
	out[1] = (int64_t)(mi.uordblks + mi.hblkhd); // in use
#else
	out[0] = -1;
	out[1] = -1;
#endif
	out[2] = sqlite3_memory_used();
}
*/
import "C"

// cMemory is the C heap as glibc's malloc tells it (held: what its arenas
// and mapped blocks take from the system; inUse: what is allocated; -1
// when the C library does not say) and the part SQLite counts as its
// own: figures for the soak benchmark, beside the Go runtime's.
func cMemory() (held, inUse, sqlite int64) {
	var out [3]C.int64_t
	C.hookd_cmemory(&out[0])
	return int64(out[0]), int64(out[1]), int64(out[2])
}
