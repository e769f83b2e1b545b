package store

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// The write-ahead log is copied back into the database file once it
// passes walCheckpointPages, and then reused: writing several times that
// many pages leaves a log no longer than the bound (plus the commit that
// passed it).
func TestWALCheckpointBound(t *testing.T) {
	d, path := openTest(t)
	ctx := context.Background()
	var pages int
	mustRun(t, d.w.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&pages))
	if pages != walCheckpointPages {
		t.Fatalf("wal_autocheckpoint = %d, want %d", pages, walCheckpointPages)
	}
	// About a page an event, ten events a commit: 3x the bound in pages.
	big := strings.Repeat("x", 3000)
	for i := range 3 * walCheckpointPages / 10 {
		evs := make([]*engine.Event, 10)
		for j := range evs {
			evs[j] = &engine.Event{Type: "test.wal", Data: map[string]any{"i": i, "j": j, "pad": big}}
		}
		mustRun(t, d.AppendEvents(ctx, evs))
	}
	st, err := os.Stat(path + "-wal")
	mustRun(t, err)
	const frame = 4096 + 24
	if limit := int64(walCheckpointPages+100) * frame; st.Size() > limit {
		t.Errorf("write-ahead log of %d bytes after %d pages written, want at most %d", st.Size(), 3*walCheckpointPages, limit)
	}
}
