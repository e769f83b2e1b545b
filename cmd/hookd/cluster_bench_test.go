package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/pgtest"
)

// benchNode is a `hookd serve` of a benchmark, in a directory of its own.
type benchNode struct {
	name, dir string
	cmd       *exec.Cmd
	log       *logBuffer
	done      chan struct{}
}

// newBenchNodes writes the directories of nodes n1..nN on url, each with
// hooks and "node: {name: nI, <nodeOpts>}" plus settings in hookd.yaml.
func newBenchNodes(b *testing.B, url string, n int, nodeOpts, settings string, hooks map[string]string) []*benchNode {
	b.Helper()
	var out []*benchNode
	for i := 1; i <= n; i++ {
		dir, err := os.MkdirTemp("", "hkb")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		name := fmt.Sprintf("n%d", i)
		files := map[string]string{"hookd.yaml": fmt.Sprintf("database: %s\nnode: {name: %s, %s}\n%s", url, name, nodeOpts, settings)}
		for f, body := range hooks {
			files[filepath.Join("hooks.d", f)] = body
		}
		for f, body := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		out = append(out, &benchNode{name: name, dir: dir})
	}
	b.Cleanup(func() {
		for _, n := range out {
			n.kill()
		}
	})
	return out
}

// start starts the node and waits until it serves.
func (n *benchNode) start(b *testing.B) {
	b.Helper()
	n.log, n.done = &logBuffer{}, make(chan struct{})
	n.cmd = exec.Command(hookdBin, "serve")
	n.cmd.Dir = n.dir
	n.cmd.Env = childEnv()
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	if err := n.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { _ = n.cmd.Wait(); close(n.done) }()
	for deadline := time.Now().Add(waitLong); !strings.Contains(n.log.String(), "hookd serving"); time.Sleep(pollStep) {
		select {
		case <-n.done:
			b.Fatalf("node %s exited:\n%s", n.name, n.log)
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("node %s did not start:\n%s", n.name, n.log)
		}
	}
}

func (n *benchNode) kill() {
	if n.cmd == nil {
		return
	}
	select {
	case <-n.done:
	default:
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.done
	}
}

// hookd runs a hookd command in the node's directory.
func (n *benchNode) hookd(args ...string) error {
	cmd := exec.Command(hookdBin, args...)
	cmd.Dir, cmd.Env = n.dir, childEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("hookd %s on %s: %w\n%s", strings.Join(args, " "), n.name, err, out)
	}
	return nil
}

// BenchmarkClusterFailover prints how long the scheduler lease takes to
// reach another node after SIGKILL of the scheduler, p50 and p99 over 10
// kills, with three nodes and the default node.heartbeat_timeout (10s):
// the killed process's node lock goes with its session, which the others
// see within a vacancy poll (target: p99 <= 2 s).
//
//	go test -run '^$' -bench ClusterFailover -benchtime 1x ./cmd/hookd/
func BenchmarkClusterFailover(b *testing.B) {
	const kills = 10
	url := pgtest.NewDatabase(b)
	hooks := map[string]string{"tick.yaml": "trigger: {every: 1s}\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n"}
	nodes := newBenchNodes(b, url, 3, "max_concurrent: 2", "", hooks)
	for _, n := range nodes {
		n.start(b)
	}
	lease := newLeaseWatch(b, url)
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		took = took[:0]
		for range kills {
			var lead string
			for lead = lease.holder(); lead == ""; lead = lease.holder() {
				time.Sleep(10 * time.Millisecond)
			}
			victim := nodes[0]
			for _, n := range nodes {
				if n.name == lead {
					victim = n
				}
			}
			victim.kill()
			t0 := time.Now()
			lease.waitOther(b, lead, func() string { return victim.log.String() })
			took = append(took, time.Since(t0))
			victim.start(b)
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(quantileDur(took, 0.5)), "failover-p50-ms")
	b.ReportMetric(ms(quantileDur(took, 0.99)), "failover-p99-ms")
	b.Logf("failover after SIGKILL of the scheduler (default heartbeat_timeout, 10s): p50 %s p99 %s of %v",
		quantileDur(took, 0.5), quantileDur(took, 0.99), took)
}

// BenchmarkClusterThroughput prints runs/s with 1, 2 and 3 nodes: 12 hooks
// whose step sleeps 200 ms (a hook runs one run at a time: its in-flight
// gate holds across nodes), kept busy by an event every 100 ms that each
// of them matches; max_concurrent 12 for the cluster, 4 per node. The
// work spreads: each node adds its 4 runs at a time.
//
//	go test -run '^$' -bench ClusterThroughput -benchtime 1x ./cmd/hookd/
func BenchmarkClusterThroughput(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchClusterThroughput(b, n) })
	}
}

func benchClusterThroughput(b *testing.B, nodes int) {
	const window = 5 * time.Second
	url := pgtest.NewDatabase(b)
	hooks := map[string]string{}
	for i := range 12 {
		hooks[fmt.Sprintf("w%02d.yaml", i)] = "trigger: {event: bench.go}\noverlap: queue\nsteps:\n  - type: shell\n    command: sleep 0.2\nskip_llm: true\n"
	}
	ns := newBenchNodes(b, url, nodes, "max_concurrent: 4", "max_concurrent: 12\n", hooks)
	for _, n := range ns {
		n.start(b)
	}
	db := openPG(b, url)
	completed := func() int {
		runs, err := db.ListRuns(context.Background(), engine.RunFilter{Status: engine.StatusCompleted, Limit: 1000000})
		if err != nil {
			b.Fatal(err)
		}
		return len(runs)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if err := ns[0].hookd("emit", "bench.go"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(2 * time.Second) // warm up: every hook busy
	var rate float64
	b.ResetTimer()
	for range b.N {
		c0, t0 := completed(), time.Now()
		time.Sleep(window)
		rate = float64(completed()-c0) / time.Since(t0).Seconds()
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(rate, "runs/s")
	b.Logf("%d node(s), 4 runs at a time each, 12 hooks of 200 ms: %.1f runs/s", nodes, rate)
}

// BenchmarkEventToRunStartStores prints, in one run, the latency from
// Engine.Emit (what the API calls) to the run's start being published,
// p50 and p99, on SQLite (a single daemon) and on PostgreSQL (a cluster
// node that schedules: the event is stored, released fenced, claimed and
// started by the node). 300 events one after another, one hook whose step
// runs true.
//
//	go test -run '^$' -bench EventToRunStartStores -benchtime 1x ./cmd/hookd/
func BenchmarkEventToRunStartStores(b *testing.B) {
	for _, st := range []string{"sqlite", "postgres"} {
		b.Run(st, func(b *testing.B) { benchEventToStart(b, st) })
	}
}

func benchEventToStart(b *testing.B, st string) {
	const events = 300
	dir := b.TempDir()
	hooks := filepath.Join(dir, "hooks.d")
	if err := os.Mkdir(hooks, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hooks, "p.yaml"), []byte("trigger: {event: bench.p}\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	settings := "max_concurrent: 4\n"
	if st == "postgres" {
		settings += "database: " + pgtest.NewDatabase(b) + "\nnode: {name: bench}\n"
	}
	path := filepath.Join(dir, "hookd.yaml")
	if err := os.WriteFile(path, []byte(settings), 0o644); err != nil {
		b.Fatal(err)
	}
	c := &cli{name: "serve", stdout: io.Discard, stderr: io.Discard, configPath: path,
		hooksDir: hooks, dbPath: filepath.Join(dir, ".hookd", "hookd.db")}
	d, err := c.settings()
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(d.DB), 0o700); err != nil {
		b.Fatal(err)
	}
	l, err := c.openLocal(d, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	started := make(chan string, 16)
	cancel := l.Engine.Subscribe(func(ev *engine.Event) {
		if ev.Type == engine.EventRunStarted {
			if id, _ := ev.Data["run_id"].(string); id != "" {
				started <- id
			}
		}
	})
	defer cancel()
	ctx := context.Background()
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		lat = lat[:0]
		for range events {
			t0 := time.Now()
			runs, err := l.Engine.Emit(ctx, &engine.Event{Type: "bench.p", Source: "bench"})
			if err != nil || len(runs) != 1 {
				b.Fatalf("emit: %d runs, %v", len(runs), err)
			}
			for id := range started {
				if id == runs[0].ID {
					break
				}
			}
			lat = append(lat, time.Since(t0))
			if _, err := l.Engine.Wait(ctx, runs[0].ID); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(quantileDur(lat, 0.5)), "start-p50-ms")
	b.ReportMetric(ms(quantileDur(lat, 0.99)), "start-p99-ms")
	b.Logf("%s: event to run start p50 %s p99 %s over %d events", st, quantileDur(lat, 0.5), quantileDur(lat, 0.99), len(lat))
}
