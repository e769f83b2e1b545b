//go:build linux && cgo

package store

/*
#include <stdlib.h>
#include <malloc.h>

// hookd_tune_malloc caps glibc's malloc arenas at two and fixes the size
// from which it maps a block of its own (128 KiB, glibc's default start,
// which it otherwise raises to 32 MiB as mapped blocks are freed). The C
// heap is SQLite's: a run's megabyte output is copied, parsed and indexed
// in blocks of 1-2 MB, on whichever thread the Go scheduler lends the
// call. With an arena a thread (up to 8 a core) and such blocks carved
// from the arenas, the freed space stayed in the process: a soak of 1 MB
// outputs grew RSS by 1.6 GB/h. It returns 0 when the C library is not
// glibc (musl has neither setting) or a variable of the environment
// (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_) sets them already.
static int hookd_tune_malloc(void) {
#if defined(__GLIBC__)
	int n = 0;
	if (getenv("MALLOC_ARENA_MAX") == NULL && mallopt(M_ARENA_MAX, 2)) n++;
	if (getenv("MALLOC_MMAP_THRESHOLD_") == NULL && mallopt(M_MMAP_THRESHOLD, 128 * 1024)) n++;
	return n;
#else
	return 0;
#endif
}

// hookd_trim_malloc gives the free pages inside glibc's malloc arenas
// back to the system (malloc_trim; glibc only).
static void hookd_trim_malloc(void) {
#if defined(__GLIBC__)
	malloc_trim(0);
#endif
}
*/
import "C"

// mallocTuned is how many of glibc's malloc settings hookd set at start
// (hookd_tune_malloc above); the soak benchmark prints it.
var mallocTuned = int(C.hookd_tune_malloc())

// trimCHeap gives the pages freed inside the C heap's arenas back to the
// system (trimmer, trim.go).
func trimCHeap() { C.hookd_trim_malloc() }
