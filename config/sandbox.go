package config

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/sandbox"
	"gopkg.in/yaml.v3"
)

// sandboxFields decodes what a hook's processes may reach: writes:,
// reads:, network: and limits: (sandbox.Policy). Paths resolve against
// the hook's workdir.
func (s *state) sandboxFields(f *fields, h *engine.Hook, opts Options) {
	if n := f.get("writes"); n != nil {
		h.Writes = s.writes(n, "writes", h.Workdir, opts)
	}
	if n := f.get("reads"); n != nil {
		h.Reads = s.sandboxPaths(n, "reads", h.Workdir)
		if h.Reads == nil {
			h.Reads = []string{} // reads: [] narrows reads to the workdir and the system's directories
		}
	}
	if n := f.get("network"); n != nil {
		h.Network = s.network(n, "network")
	}
	if n := f.get("limits"); n != nil {
		h.Limits = s.limits(n, "limits")
	}
}

// writes decodes a writes: list and refuses a path that holds one of
// hookd's own files or lies inside one: a process that may write there
// could change its hooks, settings or state.
func (s *state) writes(n *yaml.Node, path, workdir string, opts Options) []string {
	paths := s.sandboxPaths(n, path, workdir)
	own := opts.ownPaths()
	for i, p := range paths {
		if p == "" {
			continue
		}
		if hp := ownConflict(p, workdir, own); hp != "" {
			at := n
			if i < len(n.Content) {
				at = n.Content[i]
			}
			what := "lies inside"
			switch {
			case filepath.Clean(p) == filepath.Clean(hp):
				what = "is"
			case within(filepath.Clean(hp), filepath.Clean(p)):
				what = "holds"
			}
			s.errorf(at, index(path, i), "%s %s %s, one of hookd's own files, which no process of a hook may write; "+
				"declare a directory beside it", p, what, hp)
		}
	}
	return paths
}

// ownPaths are hookd's own paths a writes: may not touch: Protected and
// the hooks directory LoadDir reads.
func (o Options) ownPaths() []string {
	own := slices.Clip(o.Protected)
	if o.cleanDir != "" {
		if abs, err := filepath.Abs(o.cleanDir); err == nil {
			own = append(own, abs)
		}
	}
	return own
}

// ownConflict returns the path of own that p holds or lies inside, ""
// when none. Both are compared as written and, where they exist, with
// symbolic links resolved. A directory of own that holds the workdir
// (the state directory of db: hookd.db is the project's) is not hookd's
// alone: p may lie inside it, though not hold it.
func ownConflict(p, workdir string, own []string) string {
	forms := func(x string) []string {
		out := []string{filepath.Clean(x)}
		if r := realPath(out[0]); r != out[0] {
			out = append(out, r)
		}
		return out
	}
	for _, o := range own {
		if o == "" {
			continue
		}
		for _, pf := range forms(p) {
			for _, of := range forms(o) {
				if within(of, pf) || within(pf, of) && !within(filepath.Clean(workdir), of) {
					return o
				}
			}
		}
	}
	return ""
}

// realPath is p with symbolic links resolved in the part of it that
// exists.
func realPath(p string) string {
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if dir == filepath.Dir(dir) {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// within reports whether path is root or lies under it (both clean).
func within(path, root string) bool {
	if root == "/" {
		return true
	}
	return path == root || strings.HasPrefix(path, root) && path[len(root)] == '/'
}

// sandboxPaths decodes a list of paths, each relative to workdir or
// absolute, into absolute clean paths.
func (s *state) sandboxPaths(n *yaml.Node, path, workdir string) []string {
	var raw []string
	if !s.decodeAt(n, path, &raw) {
		return nil
	}
	out := make([]string, len(raw))
	for i, r := range raw {
		switch {
		case strings.TrimSpace(r) == "":
			s.errorf(n.Content[i], index(path, i), "must not be empty (use . for the workdir)")
		case strings.Contains(r, "{{"):
			s.errorf(n.Content[i], index(path, i), "%q holds a placeholder: these paths are fixed when the hook loads", r)
		case filepath.IsAbs(r):
			out[i] = filepath.Clean(r)
		default:
			out[i] = filepath.Join(workdir, r)
		}
	}
	return out
}

// network decodes network: true (everything), false (nothing) or a list
// of TCP ports.
func (s *state) network(n *yaml.Node, path string) *sandbox.Network {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		b, ok := s.boolean(n, path)
		if !ok {
			return nil
		}
		return &sandbox.Network{All: b}
	}
	if n.Kind != yaml.SequenceNode {
		s.errorf(n, path, "expected true, false or a list of TCP ports, got %s", describe(n))
		return nil
	}
	if len(n.Content) == 0 {
		s.errorf(n, path, "an empty list of ports; write network: false for no network")
		return nil
	}
	net := &sandbox.Network{Ports: make([]uint16, 0, len(n.Content))}
	for i, c := range n.Content {
		c = resolve(c)
		at := index(path, i)
		v, ok := s.integer(c, at)
		if !ok {
			continue
		}
		if v < 1 || v > math.MaxUint16 {
			s.errorf(c, at, "%d is not a TCP port (1 to 65535)", v)
			continue
		}
		if slices.Contains(net.Ports, uint16(v)) {
			s.errorf(c, at, "port %d is listed twice", v)
			continue
		}
		net.Ports = append(net.Ports, uint16(v))
	}
	return net
}

var limitKeys = []string{"memory", "pids", "cpu"}

// limits decodes limits: {memory: 512MiB, pids: 100, cpu: 1.5}.
func (s *state) limits(n *yaml.Node, path string) sandbox.Limits {
	var l sandbox.Limits
	f := s.fields(n, path, limitKeys, nil)
	if m := f.get("memory"); m != nil {
		at := join(path, "memory")
		if v, ok := s.text(m, at); ok {
			b, err := ParseSize(v)
			switch {
			case err != nil:
				s.errorf(m, at, "%s", err)
			case b < 1<<20:
				s.errorf(m, at, "must be at least 1MiB (got %s)", v)
			default:
				l.Memory = b
			}
		}
	}
	if p := f.get("pids"); p != nil {
		at := join(path, "pids")
		if v, ok := s.integer(p, at); ok {
			if v < 1 || v > math.MaxInt32 {
				s.errorf(p, at, "must be between 1 and %d (got %d)", math.MaxInt32, v)
			} else {
				l.Pids = int(v)
			}
		}
	}
	if c := f.get("cpu"); c != nil {
		at := join(path, "cpu")
		tag := c.ShortTag()
		v, err := strconv.ParseFloat(c.Value, 64)
		switch {
		case c.Kind != yaml.ScalarNode || tag != "!!int" && tag != "!!float" || err != nil:
			s.errorf(c, at, "expected a number of CPU cores (1.5), got %s", describe(c))
		case !(v > 0) || v > 4096:
			s.errorf(c, at, "must be > 0 and at most 4096 cores (got %s)", c.Value)
		default:
			l.CPU = v
		}
	}
	return l
}

// ParseSize parses a size in bytes: a whole number, optionally followed
// by a unit: B, k/K/KiB, m/M/MiB, g/G/GiB, t/T/TiB (powers of 1024, as
// Docker and systemd read them), or KB, MB, GB, TB (powers of 1000).
// Fractions are allowed with a unit (1.5GiB).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if num == "" {
		return 0, fmt.Errorf("%q is not a size (write 512MiB, 2GiB or a number of bytes)", s)
	}
	mult := map[string]float64{
		"": 1, "b": 1, "B": 1,
		"k": 1 << 10, "K": 1 << 10, "KiB": 1 << 10, "KB": 1e3, "kB": 1e3,
		"m": 1 << 20, "M": 1 << 20, "MiB": 1 << 20, "MB": 1e6,
		"g": 1 << 30, "G": 1 << 30, "GiB": 1 << 30, "GB": 1e9,
		"t": 1 << 40, "T": 1 << 40, "TiB": 1 << 40, "TB": 1e12,
	}
	m, ok := mult[unit]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q (use B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB)", s, unit)
	}
	if unit == "" && strings.Contains(num, ".") {
		return 0, fmt.Errorf("%q: a number of bytes must be whole", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (write 512MiB, 2GiB or a number of bytes)", s)
	}
	b := v * m
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(b), nil
}

// stepSandbox decodes a step's writes: and network:, which only steps of
// kinds that start processes under a declared policy accept.
func (s *state) stepSandbox(def *engine.StepDef, path string, writes, network *yaml.Node, h *engine.Hook, opts Options) {
	if writes == nil && network == nil {
		return
	}
	switch engine.KindProcesses(def.Type) {
	case engine.ProcessesDeclared:
	case engine.ProcessesFixed:
		for _, n := range []*yaml.Node{writes, network} {
			if n != nil {
				s.errorf(n, join(path, keyOf(n, writes)), "a %s step runs its program under the hook's policy, never with network, "+
					"and declares nothing (declare writes: on the hook)", def.Type)
			}
		}
		return
	default:
		if def.Type == "" {
			return // the missing type was reported
		}
		for _, n := range []*yaml.Node{writes, network} {
			if n != nil {
				s.errorf(n, join(path, keyOf(n, writes)), "a %s step starts no process; writes: and network: belong on "+
					"shell and run_tests steps (or on the hook)", def.Type)
			}
		}
		return
	}
	if writes != nil {
		def.Writes = s.writes(writes, join(path, "writes"), h.Workdir, opts)
	}
	if network != nil {
		def.Network = s.network(network, join(path, "network"))
	}
}

// keyOf names the step key n is the value of: writes when it is writes,
// network otherwise.
func keyOf(n, writes *yaml.Node) string {
	if n == writes {
		return "writes"
	}
	return "network"
}

// ProcessSandbox is what a process hookd starts outside a hook's steps
// declares (an MCP stdio server's sandbox:): its network and the trees it
// may write beside its working directory.
type ProcessSandbox struct {
	// Network is nil when the key is absent (an MCP stdio server must
	// say).
	Network *sandbox.Network
	Writes  []string // absolute
}

var processSandboxKeys = []string{"network", "writes"}

// processSandbox decodes sandbox: {network: ..., writes: [...]}; relative
// writes are taken from dir.
func (s *state) processSandbox(n *yaml.Node, path, dir string) *ProcessSandbox {
	if n == nil {
		return nil
	}
	v := resolve(n)
	if v.Kind != yaml.MappingNode {
		s.errorf(v, path, "expected a mapping {network: true|false|[PORT, ...], writes: [PATH, ...]}, got %s", describe(v))
		return nil
	}
	ps := &ProcessSandbox{}
	f := s.fields(v, path, processSandboxKeys, nil)
	if nn := f.get("network"); nn != nil {
		ps.Network = s.network(resolve(nn), join(path, "network"))
	}
	if w := f.get("writes"); w != nil {
		// hookd's own paths inside are hidden all the same (the
		// sandbox keeps them out of every grant).
		ps.Writes = s.sandboxPaths(resolve(w), join(path, "writes"), dir)
	}
	return ps
}

// sandboxWarnings reports through opts.Warn what of h's sandbox will not
// work as written: steps that run programs needing the network without
// it, and on this machine (opts.Sandbox) its triggers refused where
// containment is missing, its limits: not enforced.
func (s *state) sandboxWarnings(f *fields, h *engine.Hook, opts Options) {
	networkWarnings(h, s.cmds, func(line int, path, msg string) {
		opts.Warn(&Error{File: s.file, Line: line, Field: path, Msg: msg})
	})
	warn := func(key, msg string) {
		opts.Warn(&Error{File: s.file, Line: f.keyLine(key), Field: key, Msg: msg})
	}
	for i, t := range h.Tools {
		server, _, ok := strings.Cut(t, ".")
		if ok && opts.Unconfined[server] {
			opts.Warn(&Error{File: s.file, Line: f.keyLine("tools"), Field: index("tools", i), Msg: fmt.Sprintf(
				"%s: mcp_servers.%s declares no sandbox network in hookd.yaml, so it does not start and this hook's model stage fails; "+
					"add sandbox: {network: false} to it (or true, or a list of TCP ports)", t, server)})
		}
	}
	st := opts.Sandbox
	if st == nil {
		return
	}
	if !st.Off && !st.Contained() && h.NeedsContainment() {
		key := "trigger"
		if h.Trigger.Kind != engine.TriggerEvent && h.Trigger.Kind != engine.TriggerWatch {
			key = "tools"
		}
		warn(key, "this hook starts processes from untrusted input, which hookd cannot contain on this machine "+
			"(see hookd status): its triggers will be refused (sandbox_unavailable) unless hookd.yaml sets sandbox: off")
	}
	if !h.Limits.IsZero() && (st.Off || !st.LimitsOK) {
		why := st.Limits
		if st.Off {
			why = "sandbox: off in hookd.yaml"
		}
		warn("limits", h.Limits.String()+" will not be enforced on this machine: "+why)
	}
}
