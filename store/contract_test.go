package store_test

import (
	"path/filepath"
	"testing"

	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/store/storetest"
)

// TestContract runs the store contract shared with the PostgreSQL store.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Open {
		path := filepath.Join(t.TempDir(), "hookd.db")
		return func() (storetest.Store, error) { return store.Open(path) }
	})
}
