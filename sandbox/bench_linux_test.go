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
	measure := func(p *Policy, n int) time.Duration {
		const spawners = 8
		var mu sync.Mutex
		var all []time.Duration
		var wg sync.WaitGroup
		for range spawners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < n/spawners+1; i++ {
					cmd := exec.Command("/bin/true")
					cmd.Env = []string{"PATH=/usr/bin:/bin"}
					cmd.Dir = wd
					t0 := time.Now()
					proc, err := sb.Start(cmd, p)
					if err != nil {
						b.Error(err)
						return
					}
					_ = cmd.Wait()
					proc.Release(false)
					d := time.Since(t0)
					mu.Lock()
					all = append(all, d)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		return all[len(all)/2]
	}
	n := max(b.N, 200)
	var plain, boxed []time.Duration
	for range 3 { // alternate, so both see the same machine
		plain = append(plain, measure(nil, n))
		boxed = append(boxed, measure(policy, n))
	}
	sort.Slice(plain, func(i, j int) bool { return plain[i] < plain[j] })
	sort.Slice(boxed, func(i, j int) bool { return boxed[i] < boxed[j] })
	b.ReportMetric(float64(plain[1].Microseconds()), "plain-µs/spawn")
	b.ReportMetric(float64(boxed[1].Microseconds()), "sandboxed-µs/spawn")
	b.ReportMetric(float64((boxed[1] - plain[1]).Microseconds()), "added-µs/spawn")
}
