package postgres_test

import (
	"context"
	"testing"

	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/store/postgres/postgrestest"
	"github.com/hookd/hookd/store/storetest"
)

// TestContract runs the store contract shared with the SQLite store.
func TestContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Open {
		url := postgrestest.NewDatabase(t)
		return func() (storetest.Store, error) { return postgres.Open(context.Background(), url) }
	})
}
