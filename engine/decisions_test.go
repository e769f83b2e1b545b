package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestDecisionsStayBounded: an event that stays pending is dispatched
// again many times (a cluster's scheduler, every interval), each time
// starting a run of a whose start is not recorded and passing b by. What
// is kept of it stays one decision per hook, the failed starts dropped
// once read; before, every dispatch again appended its decisions.
func TestDecisionsStayBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var d decisions
	d.add(1, []decision{{hook: "b"}})
	for i := range 1000 {
		failed := &active{started: closedChan(), startErr: errors.New("start run: database is locked")}
		d.add(1, []decision{{hook: "a", start: failed}, {hook: "b"}})
		hooks, err := d.reached(ctx, 1)
		if err != nil || !slices.Equal(hooks, []string{"b"}) {
			t.Fatalf("dispatch again %d: reached %v %v; want b (a's start failed)", i, hooks, err)
		}
	}
	if n := len(d.bySeq[1]); n > 2 {
		t.Errorf("%d decisions kept for one event reaching two hooks, after 1000 dispatches again", n)
	}
}

// TestDecisionsKeptWhereRead: only a cluster's scheduler dispatches an
// event again within the process that decided it; elsewhere nothing
// reads the decisions, and none is kept.
func TestDecisionsKeptWhereRead(t *testing.T) {
	t.Parallel()
	e := &Engine{}
	e.keepDecisions(1, []decision{{hook: "a"}})
	if n := e.decided.size(); n != 0 {
		t.Errorf("a single engine keeps %d decisions; nothing reads them", n)
	}
}
