//go:build !cgo

package steps

import "errors"

// errNoCgo: SQLite (mattn/go-sqlite3) needs cgo; a hookd built with
// CGO_ENABLED=0 has no SQLite, so db_query cannot open a file (and the
// SQLite store cannot either).
var errNoCgo = errors.New("this hookd was built without cgo (CGO_ENABLED=0), and SQLite needs it")

// restrictConn refuses: without cgo there is no connection to restrict,
// and a query is never run on one that is not restricted.
func restrictConn(any) error { return errNoCgo }

func explainSQLError(err error) error { return err }
