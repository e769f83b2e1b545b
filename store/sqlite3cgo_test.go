//go:build cgo

package store

import (
	"errors"

	"github.com/mattn/go-sqlite3"
)

// What the tests use of mattn/go-sqlite3 that only its cgo build has.

// sqliteDelete is the update hook's code of a deleted row.
const sqliteDelete = sqlite3.SQLITE_DELETE

// isConstraint reports whether err is SQLite's constraint error.
func isConstraint(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrConstraint
}
