package sandbox

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// system is the Linux containment: Landlock for files and TCP ports, a
// mount namespace that hides hookd's own files, a network namespace (or a
// seccomp filter) for "no network", and a cgroup per process tree.
//
// Nothing is done in a re-executed launcher: the restrictions are applied
// to one locked OS thread of hookd's, which then forks the process (Go's
// os/exec forks from the calling thread, and the child inherits that
// thread's Landlock domain, seccomp filter, namespaces, no_new_privs and
// v1 cgroups). The thread is never unlocked, so the Go runtime ends it
// when the goroutine returns and no other goroutine ever runs on it.
type system struct {
	abi     int  // Landlock ABI, 0: none
	mountNS bool // a mount namespace can be made (root)
	netNS   bool // a network namespace can be made (root)
	root    bool // hookd runs as root: processes lose every capability
	// reaperExe, where no cgroup can be had, is the binary each tree is
	// started under as its reaper (reaper_linux.go).
	reaperExe string
	cg        *cgroups
	tmpRoot   *tmpRoot // where the processes' TMPDIRs are made
	mountGen  mountGen // changes of hookd's mount table (mountNS)

	mu       sync.Mutex
	nets     map[string]int // Policy.Key → network namespace fd
	views    map[string]*mountView
	live     map[*Process]struct{}
	detached []*Process
	closed   bool
}

// maxNetNS bounds the network namespaces kept for reuse; past it a
// process without network gets a namespace of its own.
const maxNetNS = 256

func newSystem() (*system, Status) {
	s := &system{nets: map[string]int{}, views: map[string]*mountView{}, live: map[*Process]struct{}{}}
	var st Status
	// Descriptors hookd inherited without close-on-exec would reach every
	// child: mark them all (Go's own are already).
	_ = unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if r, err := newTmpRoot(); err == nil {
		s.tmpRoot = r
	} else {
		st.Problems = append(st.Problems, fmt.Sprintf("no directory for the processes' TMPDIRs: %v", err))
	}

	if abi, err := landlockABI(); err == nil && abi > 0 {
		s.abi = abi
		st.Landlock = abi
		st.FilesOK = true
		st.Files = fmt.Sprintf("Landlock ABI %d: writes only to the workdir, declared writes, a private TMPDIR and the hook's cache", abi)
	} else {
		st.Files = fmt.Sprintf("unconfined: Landlock is not available (%v); enable CONFIG_SECURITY_LANDLOCK and lsm=landlock", errOr(err, "ABI 0"))
		st.Problems = append(st.Problems, "files are not confined: Landlock is unavailable")
	}
	if os.Geteuid() == 0 {
		s.root = true
		s.mountNS = onLockedThread(func() error { return unix.Unshare(unix.CLONE_NEWNS) }) == nil
		if s.mountNS {
			s.mountGen.start()
		}
		s.netNS = onLockedThread(func() error { return unix.Unshare(unix.CLONE_NEWNET) }) == nil
	}
	switch {
	case s.netNS:
		st.NetworkOK = true
		st.Network = "network namespace (no network: only a loopback of the hook's own); listed TCP ports: Landlock"
	case seccompSupported():
		st.NetworkOK = true
		st.Network = "seccomp filter (no network: no socket but AF_UNIX); listed TCP ports: Landlock"
	default:
		st.Network = "unconfined: neither a network namespace nor seccomp is available"
		st.Problems = append(st.Problems, "network cannot be closed: no network namespace and no seccomp")
	}
	if s.abi < 4 {
		st.Network += "; TCP port lists need Landlock ABI 4 (a step with ports gets all the network)"
	}
	switch {
	case !st.FilesOK:
		st.Hiding = "not hidden (no Landlock)"
	case s.mountNS:
		st.Hiding = "hidden by a mount namespace (an empty directory or /dev/null over each); private /tmp"
	default:
		st.Hiding = "kept out of the Landlock grants (the workdir's other entries are granted one by one; new top-level files in a directory holding hookd's files cannot be created)"
	}
	s.cg, st = newCgroups(st)
	if s.cg == nil || s.cg.v2 == "" {
		// No cgroup per tree: a reaper per tree instead.
		if exe, err := os.Executable(); err == nil {
			s.reaperExe = exe
			st.Tree = "a reaper per process tree (hookd started again as a child subreaper): what the tree leaves behind, " +
				"setsid'd or double-forked, is ended with it; one more process start per step"
		}
	}
	return s, st
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// onLockedThread runs f on a thread of its own that dies with it, so
// that whatever f changes of the thread is never seen by other
// goroutines.
func onLockedThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		errc <- f()
	}()
	return <-errc
}

// Landlock access rights.
const (
	readAccess  = llExecute | llReadFile | llReadDir
	fileAccess  = llExecute | llWriteFile | llReadFile | llTruncate | llIoctlDev
	ioctlDevABI = 5
)

// handledFS is every file-system right the ABI knows.
func handledFS(abi int) uint64 {
	h := uint64(llMakeSym<<1) - 1 // ABI 1
	if abi >= 2 {
		h |= llRefer
	}
	if abi >= 3 {
		h |= llTruncate
	}
	if abi >= ioctlDevABI {
		h |= llIoctlDev
	}
	return h
}

// prepared is what start computed for one process before it forks.
type prepared struct {
	ruleset  int
	tmp      string // the process's TMPDIR (as hookd sees it)
	tmpFD    int    // tmp, for its Landlock rule
	view     *mountView
	netFD    int // network namespace to enter; -1: none
	seccomp  []unix.SockFilter
	cg       *cgroup
	contains string
}

// start starts cmd under p: start1, once more when the hook's mount
// namespace turned out stale (a covered path replaced since it was made).
func (s *system) start(cmd *exec.Cmd, p *Policy) (*Process, error) {
	env, path, args := cmd.Env, cmd.Path, cmd.Args
	proc, err := s.start1(cmd, p)
	if errors.Is(err, errStaleView) {
		cmd.Env, cmd.Path, cmd.Args = env, path, args
		proc, err = s.start1(cmd, p)
	}
	return proc, err
}

func (s *system) start1(cmd *exec.Cmd, p *Policy) (proc *Process, err error) {
	if cmd.Env == nil {
		return nil, errors.New("sandbox: start: the command has no environment")
	}
	if s.tmpRoot == nil {
		return nil, errors.New("sandbox: start: no directory for the processes' TMPDIRs (see the sandbox's status)")
	}
	wd := p.Workdir
	if wd == "" {
		wd = cmd.Dir
	}
	if wd == "" {
		return nil, errors.New("sandbox: start: no workdir")
	}
	if cmd.Dir == "" {
		cmd.Dir = wd
	}
	wd = realPath(wd)
	hidden := make([]string, 0, len(p.Hidden))
	for _, h := range p.Hidden {
		if h != "" {
			hidden = append(hidden, realPath(h))
		}
	}
	pr := prepared{ruleset: -1, netFD: -1, tmpFD: -1}
	defer func() {
		if pr.ruleset >= 0 {
			unix.Close(pr.ruleset)
		}
		if pr.tmpFD >= 0 {
			unix.Close(pr.tmpFD)
		}
		if err != nil {
			if pr.tmp != "" {
				os.RemoveAll(pr.tmp)
			}
			if pr.cg != nil {
				pr.cg.remove()
			}
			if errors.Is(err, errStaleView) {
				s.retire(pr.view)
			}
			s.unref(pr.view)
		}
	}()
	cmd.Env = cmd.Env[:len(cmd.Env):len(cmd.Env)] // appends below copy: the caller's slice stays as it is
	writes := make([]string, 0, len(p.Writes)+3)
	if !p.ReadOnlyWorkdir {
		writes = append(writes, wd)
	}
	for _, w := range p.Writes {
		writes = append(writes, realPath(w))
	}
	cacheErr := error(nil)
	if p.Cache != "" {
		cacheErr = os.MkdirAll(p.Cache, 0o700)
	}
	if p.Cache != "" && cacheErr == nil {
		c := realPath(p.Cache)
		writes = append(writes, c)
		cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+c, "GOCACHE="+filepath.Join(c, "go-build"),
			"GOMODCACHE="+filepath.Join(c, "go-mod"), "npm_config_cache="+filepath.Join(c, "npm"),
			"PIP_CACHE_DIR="+filepath.Join(c, "pip"))
	}
	tmpEnv := ""
	if s.mountNS {
		// A private /tmp, unless the workdir or a writable tree lies under
		// /tmp: the private one would hide it (and a tree mounted back
		// under the writable /tmp would be writable whole, holes and all).
		swapTmp := !within(realPath(cmd.Path), "/tmp") // the program itself may live there
		for _, w := range append([]string{wd}, writes...) {
			if within(w, "/tmp") {
				swapTmp = false
			}
		}
		v, err := s.view(p.Key, swapTmp, hidden)
		if err != nil {
			return nil, err
		}
		pr.view = v
		if v.tmp != "" {
			pr.tmp, pr.tmpFD, err = s.tmpRoot.tmpDir(v.tmp)
			if err != nil {
				return nil, fmt.Errorf("sandbox: make the private temporary directory: %w", err)
			}
			tmpEnv = filepath.Join("/tmp", filepath.Base(pr.tmp))
		}
	}
	if pr.tmp == "" {
		tmp, fd, err := s.tmpRoot.tmpDir("")
		if err != nil {
			return nil, fmt.Errorf("sandbox: make the private temporary directory: %w", err)
		}
		pr.tmp, pr.tmpFD, tmpEnv = tmp, fd, tmp
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+tmpEnv)
	var notes []string
	if cacheErr != nil {
		// No cache is no reason not to run: the process goes without.
		notes = append(notes, "no cache directory ("+cacheErr.Error()+")")
	}
	if s.abi > 0 {
		rs, err := s.ruleset(p, wd, writes, hidden, pr.tmpFD)
		if err != nil {
			return nil, err
		}
		pr.ruleset = rs
		notes = append(notes, fmt.Sprintf("landlock ABI %d", s.abi))
	}
	if pr.view != nil {
		notes = append(notes, "mount namespace")
	}
	switch {
	case p.Network.All:
		notes = append(notes, "network: all")
	case p.Network.None() && s.netNS:
		fd, err := s.netns(p.Key)
		if err != nil {
			return nil, err
		}
		pr.netFD = fd
		notes = append(notes, "network: none (namespace)")
	case p.Network.None():
		pr.seccomp = seccompFilter(true)
		notes = append(notes, "network: none (seccomp)")
	default:
		pr.seccomp = seccompFilter(false)
		notes = append(notes, "network: "+p.Network.String())
	}
	if s.cg != nil {
		cg, err := s.cg.create(p.Limits)
		if err != nil {
			return nil, err
		}
		pr.cg = cg
		notes = append(notes, "cgroup")
		s.reapDetached()
	}

	if s.reaperExe != "" && pr.cg == nil {
		reaperArgv(s.reaperExe, cmd, p.Detach)
		notes = append(notes, "reaper")
	}
	err = onLockedThread(func() error { return s.fork(cmd, &pr) })
	if pr.netFD >= 0 && !s.keeps(p.Key, pr.netFD) {
		unix.Close(pr.netFD)
	}
	if err != nil {
		return nil, err
	}
	proc = &Process{pid: cmd.Process.Pid, sys: s, cg: pr.cg, tmp: pr.tmp, view: pr.view, note: strings.Join(notes, ", "),
		reaper: s.reaperExe != "" && pr.cg == nil, os: cmd.Process}
	s.mu.Lock()
	s.live[proc] = struct{}{}
	s.mu.Unlock()
	return proc, nil
}

// fork applies pr to the calling (locked) thread and starts cmd from it.
func (s *system) fork(cmd *exec.Cmd, pr *prepared) error {
	if pr.view != nil {
		if err := pr.view.enter(); err != nil {
			return err
		}
		if err := pr.view.check(); err != nil {
			return err
		}
	}
	if pr.netFD >= 0 {
		if err := unix.Setns(pr.netFD, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("sandbox: enter the network namespace: %w", err)
		}
	}
	if pr.cg != nil {
		if err := pr.cg.joinV1(unix.Gettid()); err != nil {
			return err
		}
	}
	if s.root {
		if err := dropCapabilities(); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	if len(pr.seccomp) > 0 {
		if err := loadSeccomp(pr.seccomp); err != nil {
			return err
		}
	}
	if pr.ruleset >= 0 {
		if err := landlockRestrict(pr.ruleset); err != nil {
			return fmt.Errorf("sandbox: landlock: %w", err)
		}
	}
	if pr.cg != nil && pr.cg.fd >= 0 {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = pr.cg.fd
	}
	err := cmd.Start()
	if pr.cg != nil {
		pr.cg.closeFD()
	}
	return err
}

// dropCapabilities empties the calling thread's capability bounding,
// ambient, inheritable, permitted and effective sets, and locks root's
// special treatment off: a process it starts as root has no capability
// (no mount, setns, ptrace, DAC override ...), whatever it execs.
func dropCapabilities() error {
	for c := 0; c <= lastCap(); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("sandbox: drop capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("sandbox: clear ambient capabilities: %w", err)
	}
	const secbits = 1<<0 | 1<<1 | 1<<2 | 1<<3 // SECBIT_NOROOT, _LOCKED, SECBIT_NO_SETUID_FIXUP, _LOCKED
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbits, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: securebits: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox: drop capabilities: %w", err)
	}
	return nil
}

// lastCap is the highest capability the kernel knows.
var lastCap = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 63
	}
	return n
})

// hide covers path, in the thread's mount namespace, with an empty
// read-only directory or /dev/null.
func hide(path string) error {
	var err error
	for try := 0; try < hideTries; try++ {
		var fi os.FileInfo
		fi, err = os.Lstat(path)
		if err != nil {
			return nil // gone meanwhile: nothing to hide, and Landlock grants kept it out
		}
		replaced := false
		if fi.IsDir() {
			err = unix.Mount("tmpfs", path, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0")
		} else {
			err = unix.Mount("/dev/null", path, "", unix.MS_BIND, "")
			if err == nil {
				err = unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
				// EINVAL: the name is no longer a mount point, its
				// file (and the cover with it) renamed over meanwhile.
				replaced = errors.Is(err, unix.EINVAL)
			}
		}
		// ENOENT: the name was renamed over between the look and the
		// mount (an editor saving hookd.yaml), and the mount found the
		// old file, unlinked. Either way: cover what the name holds now.
		if !replaced && !errors.Is(err, unix.ENOENT) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("sandbox: hide %s: %w", path, err)
	}
	return nil
}

// hideTries bounds hide's tries of a path that keeps being replaced.
const hideTries = 100

// ruleset builds the Landlock ruleset of p.
func (s *system) ruleset(p *Policy, wd string, writes, hidden []string, tmpFD int) (int, error) {
	handled := handledFS(s.abi)
	attr := rulesetAttr{fs: handled}
	if s.abi >= 4 && len(p.Network.Ports) > 0 && !p.Network.All {
		attr.net = llConnTCP | llBindTCP
	}
	if s.abi >= 4 && p.Network.None() && !s.netNS {
		attr.net = llConnTCP | llBindTCP
	}
	if s.abi >= 6 {
		attr.scoped = llScopeAbs | llScopeSig
	}
	rs, err := landlockCreate(&attr, s.abi)
	if err != nil {
		return -1, fmt.Errorf("sandbox: landlock ruleset: %w", err)
	}
	fail := func(err error) (int, error) {
		unix.Close(rs)
		return -1, err
	}
	add := func(path string, access uint64) error { return addRule(rs, path, access&handled) }

	// Reads.
	readRoots := []string{"/"}
	if p.Reads != nil {
		readRoots = append([]string{wd}, systemDirs()...)
		for _, r := range p.Reads {
			readRoots = append(readRoots, realPath(r))
		}
		if s.reaperExe != "" {
			readRoots = append(readRoots, s.reaperExe)
		}
	}
	// A path that does not exist cannot be read: only the existing ones
	// are holes, and only where no mount namespace hides them.
	var readHoles []string
	if !s.mountNS {
		readHoles = present(hidden)
	}
	for _, r := range readRoots {
		if err := carve(r, readHoles, readAccess, add); err != nil {
			return fail(err)
		}
	}
	// Writes.
	for _, w := range writes {
		holes := hidden
		if s.mountNS {
			holes = missing(hidden)
		}
		if err := carve(w, holes, handled, add); err != nil {
			return fail(err)
		}
	}
	// The private TMPDIR, by the descriptor of the directory made.
	if err := landlockAddPath(rs, tmpFD, handled); err != nil {
		return fail(fmt.Errorf("sandbox: landlock: TMPDIR: %w", err))
	}
	for _, d := range []string{"/dev/null", "/dev/zero", "/dev/full"} {
		if err := add(d, llReadFile|llWriteFile|llTruncate|llIoctlDev); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
	}
	if !p.Network.All {
		for _, port := range p.Network.Ports {
			if s.abi < 4 {
				break
			}
			if err := landlockAddPort(rs, port, llConnTCP); err != nil {
				return fail(fmt.Errorf("sandbox: landlock: port %d: %w", port, err))
			}
		}
	}
	return rs, nil
}

// addRule grants access beneath path (a file gets the rights files have).
func addRule(rs int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "sandbox: landlock: open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "sandbox: landlock: stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileAccess
	}
	if err := landlockAddPath(rs, fd, access); err != nil {
		return &os.PathError{Op: "sandbox: landlock: add rule", Path: path, Err: err}
	}
	return nil
}

// carve grants access on root less the holes in it: where a hole lies
// below root, the directories on the way to it are not granted
// themselves, only their other entries, one by one. A symbolic link among
// those entries is not granted (its target would be).
func carve(root string, holes []string, access uint64, add func(string, uint64) error) error {
	var inside []string
	for _, h := range holes {
		if h == root || within(root, h) {
			return nil // root itself is hookd's, or lies in what is: nothing of it
		}
		if within(h, root) {
			inside = append(inside, h)
		}
	}
	if len(inside) == 0 {
		err := add(root, access)
		if errors.Is(err, os.ErrNotExist) {
			return nil // a missing root grants nothing
		}
		return err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return nil
		}
		return fmt.Errorf("sandbox: list %s: %w", root, err)
	}
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 {
			continue
		}
		if err := carve(filepath.Join(root, e.Name()), inside, access, add); err != nil {
			return err
		}
	}
	return nil
}

// present returns the paths that exist.
func present(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// missing returns the paths that do not exist, less those inside one
// that does (a hidden directory covers what may appear in it).
func missing(paths []string) []string {
	var out, present []string
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			out = append(out, p)
		} else {
			present = append(present, p)
		}
	}
	kept := out[:0]
	for _, m := range out {
		covered := false
		for _, p := range present {
			if within(m, p) {
				covered = true
				break
			}
		}
		if !covered {
			kept = append(kept, m)
		}
	}
	return kept
}

// systemDirs are what any program needs to read and run: libraries,
// configuration, devices, and HOME (read-only).
func systemDirs() []string {
	d := []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc", "/dev", "/proc", "/sys", "/opt", "/run", "/var/lib", "/nix"}
	if h, err := os.UserHomeDir(); err == nil {
		d = append(d, h)
	}
	return d
}

// realPath is path made absolute with its symbolic links resolved, as
// far as it exists.
func realPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	// Resolve the part that exists; keep the rest as written.
	dir, base := filepath.Split(abs)
	if dir == abs || dir == "" {
		return abs
	}
	return filepath.Join(realPath(filepath.Clean(dir)), base)
}

// netns returns the network namespace for processes of key without
// network: one with only a loopback, made once per key and kept.
func (s *system) netns(key string) (int, error) {
	s.mu.Lock()
	if fd, ok := s.nets[key]; ok && key != "" {
		s.mu.Unlock()
		return fd, nil
	}
	s.mu.Unlock()
	var fd int
	err := onLockedThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("sandbox: network namespace: %w", err)
		}
		sock, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("sandbox: network namespace: %w", err)
		}
		defer unix.Close(sock)
		ifr, err := unix.NewIfreq("lo")
		if err != nil {
			return err
		}
		ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
		if err := unix.IoctlIfreq(sock, unix.SIOCSIFFLAGS, ifr); err != nil {
			return fmt.Errorf("sandbox: network namespace: raise lo: %w", err)
		}
		fd, err = unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, err
	}
	return fd, nil
}

// keeps stores fd as key's namespace when there is room, reporting
// whether it did (or already holds it).
func (s *system) keeps(key string, fd int) bool {
	if key == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.nets[key]; ok {
		return cur == fd
	}
	if len(s.nets) >= maxNetNS || s.closed {
		return false
	}
	s.nets[key] = fd
	return true
}

func (s *system) reapDetached() {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.detached[:0]
	for _, p := range s.detached {
		if p.cg != nil && p.cg.populated() {
			kept = append(kept, p)
			continue
		}
		p.cleanup()
	}
	s.detached = kept
}

func (s *system) close() error {
	s.mu.Lock()
	s.closed = true
	procs := make([]*Process, 0, len(s.live)+len(s.detached))
	for p := range s.live {
		procs = append(procs, p)
	}
	procs = append(procs, s.detached...)
	s.detached = nil
	for _, fd := range s.nets {
		unix.Close(fd)
	}
	s.nets = map[string]int{}
	for _, v := range s.views {
		v.retired = true
		s.dropIfUnused(v)
	}
	s.views = map[string]*mountView{}
	s.mu.Unlock()
	for _, p := range procs {
		p.Kill()
		p.cleanup()
	}
	if s.cg != nil {
		s.cg.close()
	}
	if s.tmpRoot != nil {
		s.tmpRoot.close()
	}
	s.mountGen.stop()
	return nil
}

func (s *system) contains(pid int) bool {
	if s.cg != nil && s.cg.contains(pid) {
		return true
	}
	// Without cgroups: one of the live process trees' leaders is an
	// ancestor.
	s.mu.Lock()
	leaders := make(map[int]bool, len(s.live))
	for p := range s.live {
		leaders[p.pid] = true
	}
	s.mu.Unlock()
	for i := 0; i < 64 && pid > 1; i++ {
		if leaders[pid] {
			return true
		}
		pid = parentOf(pid)
	}
	return false
}

func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			var n int
			fmt.Sscan(strings.TrimSpace(v), &n)
			return n
		}
	}
	return 0
}
