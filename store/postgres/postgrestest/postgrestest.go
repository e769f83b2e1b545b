// Package postgrestest gives tests a PostgreSQL database with hookd's
// schema in it: a copy of a template database that store/postgres
// migrated once per test binary (store/pgtest.Template), so that a test
// that opens the store starts at once instead of running every migration
// again. A test of the migrations themselves uses pgtest.NewDatabase, an
// empty database.
//
// The test package's TestMain must be pgtest.Main's, as for
// pgtest.NewDatabase.
package postgrestest

import (
	"context"
	"testing"

	"github.com/hookd/hookd/store/pgtest"
	"github.com/hookd/hookd/store/postgres"
)

var migrated = pgtest.NewTemplate(func(ctx context.Context, url string) error {
	db, err := postgres.Open(ctx, url)
	if err != nil {
		return err
	}
	return db.Close()
})

// NewDatabase creates a database of t's own with hookd's schema at its
// latest version, and returns its connection URL. It is dropped when t
// ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return migrated.NewDatabase(t)
}
