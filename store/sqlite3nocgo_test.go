//go:build !cgo

package store

// Without cgo mattn/go-sqlite3 is a stub that opens nothing, so the
// store's tests cannot run (Open fails); these names of its cgo build
// (sqlite3cgo_test.go) only let them compile, for go vet on other systems.

const sqliteDelete = 9 // SQLITE_DELETE in sqlite3.h

func isConstraint(error) bool { return false }
