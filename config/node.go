package config

import (
	"os"
	"regexp"
	"time"
)

// Node is one node's settings when several hookd processes share a
// PostgreSQL database (node: in hookd.yaml; docs/cluster.md). On SQLite
// they are not used.
type Node struct {
	// Name names the node in the database (runs record the node that ran
	// them; a node's heartbeat is kept under it). Two live processes may
	// not share one. "" means the host name (NodeName).
	Name string
	// MaxConcurrent caps the runs this node executes at once; 0 means the
	// daemon's max_concurrent, which is the cap of the whole cluster.
	MaxConcurrent int
	// HeartbeatTimeout is how long a node may go without a heartbeat
	// before its runs are declared interrupted, and how long the
	// scheduler's lease lasts without renewal.
	HeartbeatTimeout time.Duration
}

// DefaultHeartbeatTimeout is node.heartbeat_timeout when hookd.yaml sets
// none. Heartbeats and lease renewals come every fifth of it
// (HeartbeatInterval).
const DefaultHeartbeatTimeout = 10 * time.Second

// MinHeartbeatTimeout is the shortest node.heartbeat_timeout accepted.
const MinHeartbeatTimeout = time.Second

// HeartbeatInterval is how often a node heartbeats and the scheduler
// renews its lease: a fifth of the timeout, so that four heartbeats in a
// row may be late or lost before a node counts as gone.
func (n Node) HeartbeatInterval() time.Duration { return n.HeartbeatTimeout / 5 }

var nodeKeys = []string{"name", "max_concurrent", "heartbeat_timeout"}

// nodeName is what a node name may be: it is shown and compared, and
// separates from the process's instance id with a slash in the lease.
var nodeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// ValidNodeName reports whether s may name a node.
func ValidNodeName(s string) bool { return nodeName.MatchString(s) }

// NodeName is the node's name: node.name, else the host name, else
// "hookd" (a host name a node name cannot be is refused when serving).
func (d *Daemon) NodeName() string {
	if d.Node.Name != "" {
		return d.Node.Name
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "hookd"
}

// NodeMaxConcurrent is the number of runs this node executes at once.
func (d *Daemon) NodeMaxConcurrent() int {
	if d.Node.MaxConcurrent > 0 {
		return d.Node.MaxConcurrent
	}
	return d.MaxConcurrent
}

// node decodes node:.
func (s *state) node(f *fields, n *Node) {
	if v, ok := f.decode("name", &n.Name); ok && !ValidNodeName(n.Name) {
		s.errorf(v, join(f.path, "name"), "want letters, digits, '.', '_' and '-', starting with a letter or digit, at most 63 (got %q)", n.Name)
	}
	if v, ok := f.decode("max_concurrent", &n.MaxConcurrent); ok && n.MaxConcurrent < 1 {
		s.errorf(v, join(f.path, "max_concurrent"), "must be >= 1 (got %d)", n.MaxConcurrent)
	}
	if v, ok := f.decode("heartbeat_timeout", &n.HeartbeatTimeout); ok && n.HeartbeatTimeout < MinHeartbeatTimeout {
		s.errorf(v, join(f.path, "heartbeat_timeout"), "must be >= %s (got %s)", MinHeartbeatTimeout, n.HeartbeatTimeout)
	}
}
