package config

import (
	"errors"

	"github.com/hookd/hookd/internal/pgurl"
)

// DatabaseEnv is the environment variable that sets the database in
// place of hookd.yaml's database: (a postgres:// URL) or db: (a path).
const DatabaseEnv = "HOOKD_DATABASE"

// IsDatabaseURL reports whether a database setting names a PostgreSQL
// database (postgres:// or postgresql://) rather than a SQLite file.
func IsDatabaseURL(s string) bool { return pgurl.IsURL(s) }

// CheckDatabaseURL reports what is wrong with a database: setting.
func CheckDatabaseURL(s string) error {
	if !IsDatabaseURL(s) {
		return errors.New("must be a postgres:// URL, like postgres://hookd@db.internal/hookd (a SQLite file is set with db:)")
	}
	return pgurl.Check(s)
}

// SetDatabase applies a database given outside hookd.yaml (--db or
// HOOKD_DATABASE): a postgres:// URL selects PostgreSQL, anything else is
// the SQLite file's path (and selects SQLite).
func (d *Daemon) SetDatabase(v string) {
	if IsDatabaseURL(v) {
		d.Database = v
		return
	}
	d.DB, d.Database = v, ""
}
