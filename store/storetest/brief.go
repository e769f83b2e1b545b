package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// briefRuns records r00..r09, queued a minute apart from t0, alternating
// hooks a and b; odd ones are skipped.
func briefRuns(t *testing.T, s Store) {
	t.Helper()
	for i := range 10 {
		at := t0.Add(time.Duration(i) * time.Minute)
		r := &engine.Run{ID: fmt.Sprintf("r%02d", i), Hook: []string{"a", "b"}[i%2], Status: engine.StatusCompleted,
			QueuedAt: at, StartedAt: at, FinishedAt: at.Add(time.Duration(i) * time.Second)}
		if i%2 == 1 {
			r.Status, r.StartedAt = engine.StatusSkipped, time.Time{}
		}
		must(t, s.InsertRun(context.Background(), r))
	}
}

// testListRunsByTime: Since and Until select by the time a run was
// queued, Since inclusive, Until exclusive, with the other filters.
func testListRunsByTime(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	briefRuns(t, s)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	cases := []struct {
		name string
		f    engine.RunFilter
		want []string
	}{
		{"since", engine.RunFilter{Since: at(7)}, []string{"r09", "r08", "r07"}},
		{"until", engine.RunFilter{Until: at(2)}, []string{"r01", "r00"}},
		{"between", engine.RunFilter{Since: at(3), Until: at(6)}, []string{"r05", "r04", "r03"}},
		{"between, hook, limit", engine.RunFilter{Hook: "a", Since: at(1), Until: at(9), Limit: 2}, []string{"r08", "r06"}},
		{"between, before", engine.RunFilter{Since: at(3), Until: at(6), Before: "r05"}, []string{"r04", "r03"}},
		{"since after the last", engine.RunFilter{Since: at(11)}, nil},
		{"until before the first", engine.RunFilter{Until: at(0)}, nil},
		{"status and since", engine.RunFilter{Status: engine.StatusSkipped, Since: at(4)}, []string{"r09", "r07", "r05"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runs, err := s.ListRuns(ctx, tc.f)
			must(t, err)
			if got := runIDs(runs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ListRuns(%+v) = %v, want %v", tc.f, got, tc.want)
			}
		})
	}
}

func testBriefs(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	briefRuns(t, s)
	latest, err := s.LatestBriefs(ctx, "a", 3)
	must(t, err)
	var ids []string
	for _, b := range latest {
		ids = append(ids, b.ID)
	}
	if !reflect.DeepEqual(ids, []string{"r08", "r06", "r04"}) {
		t.Errorf("LatestBriefs(a, 3) = %v, want r08 r06 r04", ids)
	}
	if b := latest[0]; b.Hook != "a" || b.Status != engine.StatusCompleted || b.Duration() != 8*time.Second ||
		!b.QueuedAt.Equal(t0.Add(8*time.Minute)) {
		t.Errorf("LatestBriefs: first is %+v", b)
	}
	since, err := s.BriefsSince(ctx, t0.Add(8*time.Minute), 100)
	must(t, err)
	if len(since) != 2 || since[0].ID != "r09" || since[1].ID != "r08" || since[0].Status != engine.StatusSkipped {
		t.Errorf("BriefsSince = %+v, want r09 (skipped), r08", since)
	}
	capped, err := s.BriefsSince(ctx, t0, 4)
	must(t, err)
	if len(capped) != 4 || capped[0].ID != "r09" {
		t.Errorf("BriefsSince with limit 4 = %+v, want the 4 newest", capped)
	}
}
