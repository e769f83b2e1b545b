package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroups is the directory tree hookd's process trees live in: one
// directory "hookd-PID" under hookd's own cgroup in the cgroup2
// hierarchy (each tree placed there from its first instruction), and
// where a v1 hierarchy of a controller is writable (hybrid hosts), one
// there too for limits.
type cgroups struct {
	v2     string            // our directory in cgroup2; "" none
	v2ctl  map[string]bool   // controllers enabled for the trees' cgroups
	v1     map[string]string // controller → our directory in its v1 hierarchy
	v2base string            // the cgroup2 mount point
	seq    atomic.Uint64
	// stale are the parents of cgroups a hookd that is gone may have
	// left; they are swept staleSweepDelay after start (or at Close),
	// after hookd's crash recovery has killed (and reported) what its
	// journal knew.
	stale     []string
	sweepOnce sync.Once

	// free are empty cgroups of trees without limits, kept for the next
	// tree: making and removing a cgroup takes the kernel's global
	// cgroup lock and an RCU grace period, which with a few concurrent
	// spawns cost milliseconds each.
	mu   sync.Mutex
	free []*cgroup
}

// maxFree bounds the empty cgroups kept for reuse.
const maxFree = 64

// cgroup is one process tree's.
type cgroup struct {
	dir string   // in cgroup2
	fd  int      // dir opened, for clone3's CLONE_INTO_CGROUP; -1 once closed
	v1  []string // the tree's directories in v1 hierarchies
	// pool takes the cgroup back once empty when poolable (no limits).
	pool     *cgroups
	poolable bool
	// killed: cgroup.kill was written. Such a cgroup is not reused: on
	// 6.x kernels a process cloned into it later (CLONE_INTO_CGROUP)
	// from a cgroup that was not killed is killed at birth (kill_seq).
	killed atomic.Bool
}

// release removes the cgroup once its processes are gone, or keeps it
// for the next tree.
func (c *cgroup) release() {
	c.closeFD()
	if c.poolable && !c.killed.Load() && c.pool != nil && c.dir != "" && len(c.v1) == 0 {
		empty := !c.populated() || c.waitEmpty(2*time.Second)
		if empty {
			c.pool.mu.Lock()
			if len(c.pool.free) < maxFree {
				c.pool.free = append(c.pool.free, c)
				c.pool.mu.Unlock()
				return
			}
			c.pool.mu.Unlock()
		}
	}
	c.remove()
}

type mountInfo struct {
	point, fstype, opts string
}

func mounts() []mountInfo {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []mountInfo
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		out = append(out, mountInfo{point: unescapeMount(f[4]), fstype: g[0], opts: g[2]})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups reads /proc/self/cgroup: the cgroup2 path ("" key) and each
// v1 controller's.
func ownCgroups() map[string]string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// cgroupSeq counts the Sandboxes of this process that made cgroups.
var cgroupSeq atomic.Int64

// newCgroups sets up the cgroup directories and completes st.
func newCgroups(st Status) (*cgroups, Status) {
	own := ownCgroups()
	cg := &cgroups{v2ctl: map[string]bool{}, v1: map[string]string{}}
	// Each Sandbox of the process has a cgroup of its own: hookd-PID for
	// the first, hookd-PID-N after it (a probe of the status while a
	// daemon runs in the same process must not take over its cgroup).
	name := fmt.Sprintf("hookd-%d", os.Getpid())
	if n := cgroupSeq.Add(1) - 1; n > 0 {
		name = fmt.Sprintf("hookd-%d-%d", os.Getpid(), n)
	}
	for _, m := range mounts() {
		switch m.fstype {
		case "cgroup2":
			path, ok := own[""]
			if !ok || cg.v2 != "" {
				continue
			}
			if filepath.Base(path) == selfLeaf() {
				path = filepath.Dir(path) // an earlier Sandbox moved the process there
			}
			parent := filepath.Join(m.point, path)
			cg.stale = append(cg.stale, parent)
			dir := filepath.Join(parent, name)
			if err := freshDir(dir); err != nil {
				st.Problems = append(st.Problems, fmt.Sprintf("no cgroup of hookd's own in %s (%v): a process that leaves its group (setsid) outlives its step; run hookd as root or with cgroup delegation (systemd Delegate=yes)", parent, err))
				continue
			}
			cg.v2, cg.v2base = dir, m.point
			// Controllers: enabled in our parent's and our subtree_control
			// where the parent allows (it must hold no process itself,
			// unless it is the root).
			if path != "/" {
				if leaf, err := intoLeaf(parent); err != nil {
					st.Problems = append(st.Problems, err.Error())
				} else if leaf != "" {
					st.Tree = "hookd moved itself into " + leaf + " (a cgroup that holds a process cannot give its children controllers)"
				}
			}
			for _, c := range limitControllers {
				if writeFile(filepath.Join(parent, "cgroup.subtree_control"), "+"+c) == nil || path == "/" && has(filepath.Join(parent, "cgroup.subtree_control"), c) {
					if writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+c) == nil {
						cg.v2ctl[c] = true
					}
				}
			}
		case "cgroup":
			for _, c := range limitControllers {
				if !hasOpt(m.opts, c) || cg.v1[c] != "" {
					continue
				}
				path, ok := own[c]
				if !ok {
					continue
				}
				parent := filepath.Join(m.point, path)
				cg.stale = append(cg.stale, parent)
				dir := filepath.Join(parent, name)
				if freshDir(dir) == nil {
					cg.v1[c] = dir
				}
			}
		}
	}
	time.AfterFunc(staleSweepDelay, cg.sweep)
	if cg.v2 == "" {
		st.Tree = "process group only: a process that leaves its group (setsid, a double fork) can outlive its step"
		if len(cg.v1) == 0 {
			st.Limits = "not enforceable (no writable cgroup controllers)"
			return nil, st
		}
	} else {
		st.CgroupsOK = true
		st.Delegation = cg.v2
		moved := st.Tree
		st.Tree = "a cgroup per process tree under " + cg.v2 + " (cgroup.kill ends every process it started)"
		if moved != "" {
			st.Tree += "; " + moved
		}
	}
	var lim []string
	for _, c := range limitControllers {
		switch {
		case cg.v2ctl[c]:
			lim = append(lim, c+" (cgroup2)")
		case cg.v1[c] != "":
			lim = append(lim, c+" (cgroup v1)")
		}
	}
	if len(lim) == 0 {
		st.Limits = "not enforceable (no cgroup controller can be enabled)"
	} else {
		st.Limits = strings.Join(lim, ", ")
		st.LimitsOK = (cg.v2ctl["memory"] || cg.v1["memory"] != "") && (cg.v2ctl["pids"] || cg.v1["pids"] != "")
	}
	return cg, st
}

// limitControllers are the cgroup controllers the limits use.
var limitControllers = []string{"memory", "pids", "cpu"}

// selfLeaf names the cgroup hookd moves itself into (see intoLeaf).
func selfLeaf() string { return fmt.Sprintf("hookd-%d-self", os.Getpid()) }

// intoLeaf moves this process out of parent, its cgroup2, into a leaf
// below it, when parent could give its children a controller the limits
// use but does not and this process is alone in it: a cgroup other than
// the root that holds processes cannot enable controllers for its
// children (cgroup2's rule of no internal processes), and that is how a
// systemd service with Delegate=yes starts. It returns the leaf, or ""
// when it left the process where it was.
func intoLeaf(parent string) (string, error) {
	avail, _ := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	enabled, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	wanted := false
	for _, c := range limitControllers {
		if slices.Contains(strings.Fields(string(avail)), c) && !slices.Contains(strings.Fields(string(enabled)), c) {
			wanted = true
		}
	}
	procs, err := os.ReadFile(filepath.Join(parent, "cgroup.procs"))
	if !wanted || err != nil || strings.TrimSpace(string(procs)) != strconv.Itoa(os.Getpid()) {
		return "", nil
	}
	leaf := filepath.Join(parent, selfLeaf())
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("limits: cannot make a leaf cgroup for hookd itself in %s (%v)", parent, err)
	}
	if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
		_ = unix.Rmdir(leaf)
		return "", fmt.Errorf("limits: cannot move hookd into %s (%v)", leaf, err)
	}
	return leaf, nil
}

func hasOpt(opts, c string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == c {
			return true
		}
	}
	return false
}

func has(file, word string) bool {
	b, err := os.ReadFile(file)
	return err == nil && hasOpt(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", ","), word)
}

// freshDir makes dir, emptying and remaking one a dead hookd of the same
// pid left.
func freshDir(dir string) error {
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, os.ErrExist) {
		removeTree(dir)
		err = os.Mkdir(dir, 0o755)
	}
	return err
}

// sweepStale removes the cgroups of hookd processes that are gone (a
// crash): every process still in them is killed first.
func sweepStale(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), "hookd-")
		if !ok || !e.IsDir() {
			continue
		}
		n, _, _ = strings.Cut(n, "-") // hookd-PID-N: another Sandbox of that process
		pid, err := strconv.Atoi(n)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == nil || errors.Is(syscall.Kill(pid, 0), syscall.EPERM) {
			continue // that hookd runs
		}
		removeTree(filepath.Join(parent, e.Name()))
	}
}

// removeTree kills every process in the cgroup dir and below, then
// removes the directories, deepest first.
func removeTree(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeTree(filepath.Join(dir, e.Name()))
		}
	}
	c := &cgroup{dir: dir, fd: -1}
	c.kill()
	c.waitEmpty(2 * time.Second)
	_ = unix.Rmdir(dir)
}

func writeFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// sweep removes, once, the cgroups of hookd processes that are gone.
func (cs *cgroups) sweep() {
	cs.sweepOnce.Do(func() {
		for _, p := range cs.stale {
			sweepStale(p)
		}
	})
}

// staleSweepDelay is how long after start the cgroups of a hookd that
// is gone are swept: after the new hookd's crash recovery has killed,
// and named in its records, what its journal knew. The sweep ends what
// the journal did not know (a process that left its group).
const staleSweepDelay = 30 * time.Second

// create makes the cgroup of one process tree (or takes an empty one
// back from the pool when the tree has no limits).
func (cs *cgroups) create(lim Limits) (*cgroup, error) {
	if lim.IsZero() && cs.v2 != "" {
		cs.mu.Lock()
		var c *cgroup
		if n := len(cs.free); n > 0 {
			c, cs.free = cs.free[n-1], cs.free[:n-1]
		}
		cs.mu.Unlock()
		if c != nil {
			fd, err := unix.Open(c.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err == nil {
				c.fd = fd
				return c, nil
			}
			c.remove()
		}
	}
	name := "t" + strconv.FormatUint(cs.seq.Add(1), 10)
	c := &cgroup{fd: -1, pool: cs, poolable: lim.IsZero()}
	if cs.v2 != "" {
		c.dir = filepath.Join(cs.v2, name)
		if err := os.Mkdir(c.dir, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: make cgroup: %w", err)
		}
		fd, err := unix.Open(c.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			c.remove()
			return nil, fmt.Errorf("sandbox: open cgroup: %w", err)
		}
		c.fd = fd
		if err := cs.limitV2(c.dir, lim); err != nil {
			c.remove()
			return nil, err
		}
	}
	for _, ctl := range limitControllers {
		base := cs.v1[ctl]
		if base == "" || cs.v2ctl[ctl] || !limitSet(lim, ctl) {
			continue
		}
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			c.remove()
			return nil, fmt.Errorf("sandbox: make %s cgroup: %w", ctl, err)
		}
		c.v1 = append(c.v1, dir)
		if err := limitV1(dir, ctl, lim); err != nil {
			c.remove()
			return nil, err
		}
	}
	return c, nil
}

func limitSet(l Limits, ctl string) bool {
	switch ctl {
	case "memory":
		return l.Memory > 0
	case "pids":
		return l.Pids > 0
	case "cpu":
		return l.CPU > 0
	}
	return false
}

const cpuPeriod = 100000 // µs

func (cs *cgroups) limitV2(dir string, l Limits) error {
	set := func(ctl, file, v string) error {
		if !cs.v2ctl[ctl] {
			return nil
		}
		if err := writeFile(filepath.Join(dir, file), v); err != nil {
			return fmt.Errorf("sandbox: set %s: %w", file, err)
		}
		return nil
	}
	if l.Memory > 0 {
		if err := set("memory", "memory.max", strconv.FormatInt(l.Memory, 10)); err != nil {
			return err
		}
		_ = set("memory", "memory.swap.max", "0")
	}
	if l.Pids > 0 {
		if err := set("pids", "pids.max", strconv.Itoa(l.Pids)); err != nil {
			return err
		}
	}
	if l.CPU > 0 {
		if err := set("cpu", "cpu.max", fmt.Sprintf("%d %d", int64(l.CPU*cpuPeriod), cpuPeriod)); err != nil {
			return err
		}
	}
	return nil
}

func limitV1(dir, ctl string, l Limits) error {
	var err error
	switch ctl {
	case "memory":
		err = writeFile(filepath.Join(dir, "memory.limit_in_bytes"), strconv.FormatInt(l.Memory, 10))
		if err == nil {
			// With swap accounting, the same bound on memory and swap.
			_ = writeFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), strconv.FormatInt(l.Memory, 10))
		}
	case "pids":
		err = writeFile(filepath.Join(dir, "pids.max"), strconv.Itoa(l.Pids))
	case "cpu":
		err = writeFile(filepath.Join(dir, "cpu.cfs_period_us"), strconv.Itoa(cpuPeriod))
		if err == nil {
			err = writeFile(filepath.Join(dir, "cpu.cfs_quota_us"), strconv.FormatInt(int64(l.CPU*cpuPeriod), 10))
		}
	}
	if err != nil {
		return fmt.Errorf("sandbox: set the %s limit: %w", ctl, err)
	}
	return nil
}

// joinV1 moves the thread tid into the tree's v1 cgroups: the process it
// forks starts there.
func (c *cgroup) joinV1(tid int) error {
	for _, d := range c.v1 {
		if err := writeFile(filepath.Join(d, "tasks"), strconv.Itoa(tid)); err != nil {
			return fmt.Errorf("sandbox: join %s: %w", d, err)
		}
	}
	return nil
}

func (c *cgroup) closeFD() {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

func (c *cgroup) pids() []int {
	if c.dir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if n, err := strconv.Atoi(sc.Text()); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func (c *cgroup) populated() bool {
	if c.dir == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	if err != nil {
		return false
	}
	return bytes.Contains(b, []byte("populated 1"))
}

// kill ends every process of the cgroup: cgroup.kill, or where the kernel
// has none (before 5.14), SIGKILL to each until none is left.
func (c *cgroup) kill() {
	if c.dir == "" {
		return
	}
	c.killed.Store(true)
	if writeFile(filepath.Join(c.dir, "cgroup.kill"), "1") == nil {
		return
	}
	for range 100 {
		pids := c.pids()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitEmpty waits, at most d, until no process is left in the cgroup.
func (c *cgroup) waitEmpty(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		if !c.populated() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
}

// remove removes the cgroup's directories once its processes are gone.
func (c *cgroup) remove() {
	c.closeFD()
	if c.dir != "" {
		// Most often the tree is gone by now: try first, wait only if
		// something is still leaving.
		if err := unix.Rmdir(c.dir); err == unix.EBUSY {
			c.waitEmpty(2 * time.Second)
			_ = unix.Rmdir(c.dir)
		}
	}
	for _, d := range c.v1 {
		for i := 0; i < 100; i++ {
			if err := unix.Rmdir(d); err != unix.EBUSY {
				break
			}
			time.Sleep(time.Millisecond) // the forking thread is still leaving
		}
	}
}

// contains reports whether pid's cgroup2 lies under ours.
func (cs *cgroups) contains(pid int) bool {
	if cs.v2 == "" {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return within(filepath.Join(cs.v2base, p), cs.v2) && filepath.Join(cs.v2base, p) != cs.v2
		}
	}
	return false
}

func (cs *cgroups) close() {
	cs.mu.Lock()
	cs.free = nil
	cs.mu.Unlock()
	if cs.v2 != "" {
		removeTree(cs.v2)
	}
	for _, d := range cs.v1 {
		removeTree(d)
	}
}
