//go:build cgo

package steps

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// restrictConn makes a db_query connection (dc, the driver's) one that
// may only read: ATTACH is disabled and readOnlyAuthorizer refuses every
// operation but SELECT, reading columns, calling functions and a few
// pragmas that describe the schema.
func restrictConn(dc any) error {
	c, ok := dc.(*sqlite3.SQLiteConn)
	if !ok {
		return fmt.Errorf("unexpected driver connection %T", dc)
	}
	c.SetLimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
	c.RegisterAuthorizer(readOnlyAuthorizer)
	return nil
}

// readOnlyPragmas are the pragmas a query may use: true for those whose
// argument only names what to describe, false for those that would set
// a value when given one.
var readOnlyPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true, "index_list": true,
	"index_info": true, "index_xinfo": true, "foreign_key_list": true,
	"user_version": false, "schema_version": false, "application_id": false,
}

// SQLite authorizer action codes (sqlite3.h) the package does not export.
const sqliteRecursive = 33

func readOnlyAuthorizer(op int, arg1, arg2, _ string) int {
	switch op {
	case sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqliteRecursive:
		return sqlite3.SQLITE_OK
	case sqlite3.SQLITE_PRAGMA:
		if describes, ok := readOnlyPragmas[strings.ToLower(arg1)]; ok && (describes || arg2 == "") {
			return sqlite3.SQLITE_OK
		}
	}
	return sqlite3.SQLITE_DENY
}

func explainSQLError(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrAuth || se.Code == sqlite3.ErrReadonly) {
		return fmt.Errorf("only reading is allowed: %w", err)
	}
	return err
}
