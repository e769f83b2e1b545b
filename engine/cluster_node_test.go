package engine_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/store/postgres/postgrestest"
	"github.com/hookd/hookd/triggers"
)

// lockNode holds the node lock of name in the cluster database at url
// until the test ends, as a running hookd does.
func lockNode(ctx context.Context, t *testing.T, url, name string) {
	t.Helper()
	l, err := postgres.LockNode(ctx, url, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Unlock() })
}

// startClusterNode starts an engine on cfg (its Store and Cluster set,
// the node locked) with the cluster tests' defaults: a new event index,
// a grace of 50 ms, a 100 ms tick and no log. It stops when the test ends.
func startClusterNode(ctx context.Context, t *testing.T, cfg engine.Config, hooks []*engine.Hook) *engine.Engine {
	t.Helper()
	cfg.Events = triggers.NewEventIndex()
	cfg.Grace = 50 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Tick = 100 * time.Millisecond
	eng, err := engine.New(cfg, hooks)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Stop)
	return eng
}

// newClusterDB makes a PostgreSQL database for t and opens it; it is
// closed when t ends, after the engines t started stop.
func newClusterDB(ctx context.Context, t *testing.T) (string, *postgres.DB) {
	t.Helper()
	url := postgrestest.NewDatabase(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return url, db
}
