//go:build !(linux && cgo)

package store

// trimCHeap does nothing where the C library is not glibc's on Linux
// (malloc_glibc.go has the reason for it there).
func trimCHeap() {}
