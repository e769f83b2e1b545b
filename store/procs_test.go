package store

import (
	"context"
	"reflect"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestRecoverInterruptedReturnsProcs: the process groups recorded while
// a run ran come back with it when a crash left it running.
func TestRecoverInterruptedReturnsProcs(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	mustRun(t, d.StartRun(ctx, &engine.Run{ID: "r", Hook: "h", StartedAt: t0}))
	mustRun(t, d.StartRun(ctx, &engine.Run{ID: "none", Hook: "h2", StartedAt: t0}))
	gs := []engine.ProcGroup{{PGID: 4242, Start: 99, Boot: "b", Step: 1}, {PGID: 4250, Start: 120, Boot: "b", Step: 2}}
	for _, g := range gs {
		mustRun(t, d.AddRunProc(ctx, "r", g))
	}
	runs, err := d.RecoverInterrupted(ctx, t0)
	mustRun(t, err)
	got := map[string][]engine.ProcGroup{}
	for _, r := range runs {
		got[r.ID] = r.Procs
	}
	if !reflect.DeepEqual(got, map[string][]engine.ProcGroup{"r": gs, "none": nil}) {
		t.Errorf("recovered procs = %+v", got)
	}
}
