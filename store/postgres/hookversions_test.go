package postgres

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestClaimRunsVersions: a run records its hook's version when queued; a
// node claims only the runs of the hooks it has, at the version it has
// (or runs with no version recorded); runs of a hook whose file differs
// on this node stay queued for a node that has the version that queued
// them.
func TestClaimRunsVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	l, ok, err := d.AcquireLease(ctx, SchedulerLease, "a", time.Hour)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	enqueue := func(id, hook, version string) {
		t.Helper()
		r := queued(id, hook, time.Time{})
		r.HookVersion = version
		must(t, d.EnqueueFenced(ctx, l, r))
	}
	enqueue("r1", "build", "v1")
	enqueue("r2", "build", "v2") // queued by a node with another build.yaml
	enqueue("r3", "triage", "t1")
	enqueue("r4", "deploy", "d1") // no node below has deploy
	must(t, d.InsertRun(ctx, &engine.Run{ID: "r5", Hook: "build", Status: engine.StatusQueued, QueuedAt: t0}))
	releaseAll(t, d) // as a scheduler releases queued runs to the nodes

	if got, err := d.GetRun(ctx, "r2"); err != nil || got.HookVersion != "v2" {
		t.Fatalf("stored run r2: %+v %v, want hook version v2", got, err)
	}

	a := map[string]string{"build": "v1", "triage": "t1"}
	b := map[string]string{"build": "v2", "triage": "t1"}
	claimAll := func(node string, versions map[string]string) []string {
		t.Helper()
		var ids []string
		for {
			runs, err := d.ClaimRunsVersions(ctx, node, 1, versions)
			if versions == nil {
				runs, err = d.ClaimRuns(ctx, node, 1)
			}
			must(t, err)
			if len(runs) == 0 {
				sort.Strings(ids)
				return ids
			}
			for _, r := range runs {
				if r.Status != engine.StatusRunning {
					t.Errorf("claimed run %s is %s", r.ID, r.Status)
				}
				ids = append(ids, r.ID)
			}
		}
	}
	for _, none := range []map[string]string{{}, {"other": "x"}} {
		runs, err := d.ClaimRunsVersions(ctx, "none", 10, none)
		must(t, err)
		if len(runs) != 0 {
			t.Errorf("a node with hooks %v claimed %v", none, runIDs(runs))
		}
	}
	if runs, err := d.ClaimRunsVersions(ctx, "none", 10, nil); err != nil || len(runs) != 0 {
		t.Errorf("a node with a nil map of hooks claimed %v (%v)", runIDs(runs), err)
	}
	if got, want := claimAll("a", a), []string{"r1", "r3", "r5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("node a claimed %v, want %v (its build version, triage, and the run with no version)", got, want)
	}
	if got, want := claimAll("b", b), []string{"r2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("node b claimed %v, want %v", got, want)
	}
	q, err := d.QueuedRuns(ctx)
	must(t, err)
	if len(q) != 1 || q[0].ID != "r4" {
		t.Errorf("queued after the claims: %v, want r4 (no node has deploy)", runIDs(q))
	}
	// ClaimRuns, without versions, claims any run.
	if got := claimAll("c", nil); !reflect.DeepEqual(got, []string{"r4"}) {
		t.Errorf("ClaimRuns claimed %v, want r4", got)
	}
}

// TestClaimRunsVersionsOnce: nodes of two versions claiming one mixed
// queue at once each claim only their version's runs, and every run once.
func TestClaimRunsVersionsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	const n = 120
	for i := range n {
		must(t, d.InsertRun(ctx, &engine.Run{ID: fmt.Sprintf("q%03d", i), Hook: "h", Status: engine.StatusQueued,
			QueuedAt: t0, HookVersion: fmt.Sprintf("v%d", i%2)}))
	}
	releaseAll(t, d)
	handles := []*DB{open(t, url), open(t, url)}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		claimed = map[string][]string{}
	)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			version := fmt.Sprintf("v%d", i%2)
			node := "node-" + version
			for {
				runs, err := handles[i%2].ClaimRunsVersions(ctx, node, 3, map[string]string{"h": version})
				if err != nil {
					t.Error(err)
					return
				}
				if len(runs) == 0 {
					return
				}
				mu.Lock()
				for _, r := range runs {
					claimed[r.ID] = append(claimed[r.ID], node)
					if r.HookVersion != version {
						t.Errorf("node %s claimed run %s of version %s", node, r.ID, r.HookVersion)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("%d of %d runs claimed", len(claimed), n)
	}
	for id, by := range claimed {
		if len(by) != 1 {
			t.Errorf("run %s claimed %d times: %v", id, len(by), by)
		}
	}
}

// TestHookVersionsOfNodes: nodes report the hooks they loaded; Nodes
// returns them with the scheduler; DifferingHooks names the hooks whose
// versions differ between live nodes, a missing hook included, and leaves
// out silent nodes and nodes that never reported.
func TestHookVersionsOfNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	must(t, d.Heartbeat(ctx, "a", 4, ""))
	must(t, d.ReportHookVersions(ctx, "a", map[string]string{"build": "v1", "triage": "t1", "old": "o1"}))
	// A report replaces the one before.
	must(t, d.ReportHookVersions(ctx, "a", map[string]string{"build": "v1", "triage": "t1", "deploy": "d1"}))
	must(t, d.ReportHookVersions(ctx, "b", map[string]string{"build": "v2", "triage": "t1"})) // registers b
	must(t, d.Heartbeat(ctx, "c", 4, ""))                                                     // reports nothing
	if _, ok, err := d.AcquireLease(ctx, SchedulerLease, "b/1f2e3d", time.Hour); err != nil || !ok {
		t.Fatal(ok, err)
	}
	nodes, err := d.Nodes(ctx, time.Hour)
	must(t, err)
	if len(nodes) != 3 {
		t.Fatalf("nodes %+v", nodes)
	}
	if want := map[string]string{"build": "v1", "triage": "t1", "deploy": "d1"}; !reflect.DeepEqual(nodes[0].Hooks, want) {
		t.Errorf("node a's hooks %v, want %v", nodes[0].Hooks, want)
	}
	if nodes[2].Hooks != nil {
		t.Errorf("node c never reported, yet has hooks %v", nodes[2].Hooks)
	}
	for i, want := range []bool{false, true, false} {
		if nodes[i].Scheduler != want || !nodes[i].Alive {
			t.Errorf("node %s: scheduler %v alive %v, want scheduler %v, alive", nodes[i].Name, nodes[i].Scheduler, nodes[i].Alive, want)
		}
	}
	want := []HookDrift{
		{Hook: "build", Versions: map[string]string{"a": "v1", "b": "v2"}},
		{Hook: "deploy", Versions: map[string]string{"a": "d1", "b": ""}},
	}
	if got := DifferingHooks(nodes); !reflect.DeepEqual(got, want) {
		t.Errorf("DifferingHooks = %+v, want %+v", got, want)
	}
	// A silent node's hooks do not count.
	nodes[1].Alive = false
	if got := DifferingHooks(nodes); got != nil {
		t.Errorf("with b silent, DifferingHooks = %+v, want none", got)
	}
}
