package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/hookd/hookd/clock"
)

// TestDispatchMigration: events stored before the dispatch state existed
// count as dispatched, so an upgrade does not dispatch history again.
func TestDispatchMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", path+"?_txlock=immediate")
	mustRun(t, err)
	mustRun(t, migrate(ctx, db, migrations[:1], clock.System{}))
	_, err = db.Exec(`INSERT INTO events (id, type) VALUES ('old', 'deploy.finished')`)
	mustRun(t, err)
	mustRun(t, db.Close())

	d, err := Open(path)
	mustRun(t, err)
	defer d.Close()
	pending, err := d.PendingEvents(ctx, 10)
	mustRun(t, err)
	if len(pending) != 0 {
		t.Errorf("an event stored before the upgrade is pending: %+v", pending)
	}
}
