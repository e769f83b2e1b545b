package engine_test

import (
	"os"
	"testing"

	"github.com/hookd/hookd/store/pgtest"
)

// TestMain stops the throwaway PostgreSQL server the cluster tests start
// (store/pgtest), if one started.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
