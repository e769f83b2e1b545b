package sandbox

import (
	"os/exec"
	"sort"
	"sync"
	"testing"
	"time"
)

// BenchmarkSpawn starts /bin/true from 8 concurrent spawners, unconfined
// and under a policy (no network, the workdir writable, hookd's files
// hidden, a cgroup), in the same run, and prints the median added µs per
// spawn: the sandbox's cost the containment issue bounds (≤ 1 ms).
func BenchmarkSpawn(b *testing.B) {
	sb := New(Options{})
	defer sb.Close()
	if !sb.Status().Contained() {
		b.Skip("no containment here") // a benchmark: run by hand, never required
	}
	wd := b.TempDir()
	policy := &Policy{Workdir: wd, Key: "bench", Hidden: []string{wd + "/hookd.yaml", wd + "/.hookd"}}
	// Each spawner alternates an unconfined and a sandboxed spawn, so that
	// both see the same machine (other work on it moves both medians).
	const spawners = 8
	n := max(b.N, 200)
	var mu sync.Mutex
	var plain, boxed []time.Duration
	spawn := func(p *Policy) time.Duration {
		cmd := exec.Command("/bin/true")
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		cmd.Dir = wd
		t0 := time.Now()
		proc, err := sb.Start(cmd, p)
		if err != nil {
			b.Error(err)
			return 0
		}
		_ = cmd.Wait()
		proc.Release(false)
		return time.Since(t0)
	}
	var wg sync.WaitGroup
	for w := range spawners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/spawners+1; i++ {
				first, second := (*Policy)(nil), policy
				if (i+w)%2 == 1 {
					first, second = second, first
				}
				d1, d2 := spawn(first), spawn(second)
				if first != nil {
					d1, d2 = d2, d1
				}
				mu.Lock()
				plain, boxed = append(plain, d1), append(boxed, d2)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	median := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	pm, bm := median(plain), median(boxed)
	b.ReportMetric(float64(pm.Microseconds()), "plain-µs/spawn")
	b.ReportMetric(float64(bm.Microseconds()), "sandboxed-µs/spawn")
	b.ReportMetric(float64((bm - pm).Microseconds()), "added-µs/spawn")
}
