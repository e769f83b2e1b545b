// Package api holds what both ends of hookd's control API share: the
// requests and answers of its routes (docs/api.md), the codec of the
// hooks list, and where a daemon's socket is. Package server serves
// them; package client asks for them.
package api

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/sandbox"
)

// Health is the answer of /healthz.
type Health struct {
	Status string `json:"status"`
	DB     string `json:"db,omitempty"`
	PID    int    `json:"pid,omitempty"`
	Uptime string `json:"uptime,omitempty"`
}

// Error is the body of every error answer.
type Error struct {
	Error string `json:"error"`
	Gate  string `json:"gate,omitempty"`
	RunID string `json:"run_id,omitempty"`
}

// OutputChunk is one event of the live output (GET /v1/output, GET
// /v1/runs/{id}/output): a piece of a running step's output, redacted,
// or (end) a run's end with how many chunks the client lost.
type OutputChunk = engine.LiveChunk

type FireRequest struct {
	Event map[string]any `json:"event,omitempty"`
	Force bool           `json:"force,omitempty"`
	// EvenDisabled runs a hook that has enabled: false
	// (engine.FireOptions.EvenDisabled).
	EvenDisabled bool `json:"even_disabled,omitempty"`
	// IgnoreWhere fires with Event although the hook's where: rejects it
	// (engine.FireOptions.IgnoreWhere).
	IgnoreWhere bool `json:"ignore_where,omitempty"`
	// Depth is the event chain depth of the run or handler that fires
	// (HOOKD_DEPTH; engine.FireOptions.Depth): a chain that loops is cut
	// by the event_depth gate.
	Depth int `json:"depth,omitempty"`
}

type RunAnswer struct {
	Run *engine.Run `json:"run"`
}

type EmitRequest struct {
	ID   string         `json:"id,omitempty"`
	Type string         `json:"type"`
	Data map[string]any `json:"data,omitempty"`
	// Depth is the event chain depth of what publishes it (HOOKD_DEPTH;
	// engine.Event.Depth).
	Depth int `json:"depth,omitempty"`
}

type EmitAnswer struct {
	EventID string        `json:"event_id"`
	Seq     int64         `json:"seq"`
	Runs    []*engine.Run `json:"runs"`
	// Duplicate: an event with this id was published before; this one was
	// neither stored nor dispatched again (seq is the first one's).
	Duplicate bool `json:"duplicate,omitempty"`
	// Pending: hookd is stopping; the event is stored and is dispatched
	// when it starts again.
	Pending bool `json:"pending,omitempty"`
	// Refused: the matching hooks a gate refused, each with the record the
	// refusal left.
	Refused []EmitRefusal `json:"refused,omitempty"`
	// Queued: stored for the cluster's scheduler, on another node, which
	// dispatches it; the runs it starts are not known here.
	Queued bool `json:"queued,omitempty"`
	// Fate is what became of the event (absent when duplicate, pending or
	// queued): why it ran nothing, when it did not.
	Fate *engine.EventFate `json:"fate,omitempty"`
}

// EmitRefusal is a matching hook whose trigger a gate refused.
type EmitRefusal struct {
	Hook  string `json:"hook"`
	RunID string `json:"run_id"` // the skipped (or dropped) record
	Gate  string `json:"gate"`
	Error string `json:"error"` // as a refused fire says it
}

// NewEmitAnswer is the answer to an emit of ev that did em.
func NewEmitAnswer(ev *engine.Event, em *engine.Emitted) EmitAnswer {
	ans := EmitAnswer{EventID: ev.ID, Seq: ev.Seq, Runs: append([]*engine.Run{}, em.Runs...), Queued: em.Elsewhere, Fate: em.Fate}
	for _, r := range em.Refused {
		ans.Refused = append(ans.Refused, EmitRefusal{Hook: r.Run.Hook, RunID: r.Run.ID, Gate: r.Gate.Gate, Error: r.Gate.Error()})
	}
	return ans
}

// Limits of a published event.
const (
	MaxEventType = 200
	MaxEventID   = 200
)

// CheckEvent validates a published event: a type made of dot-separated
// segments of letters, digits, '_' and '-' (no wildcards), not in the
// engine's own hook.run namespace; an id of printable ASCII.
func CheckEvent(req *EmitRequest) error {
	switch {
	case req.Type == "":
		return errors.New("type is required")
	case len(req.Type) > MaxEventType:
		return fmt.Errorf("type is longer than %d bytes", MaxEventType)
	case engine.ReservedEventType(req.Type):
		return errors.New("type: " + engine.ReservedEventTypes + " events are published by hookd itself")
	}
	if err := engine.ValidateEventType(req.Type); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	if len(req.ID) > MaxEventID {
		return fmt.Errorf("id is longer than %d bytes", MaxEventID)
	}
	if req.Depth < 0 {
		return fmt.Errorf("depth is %d; want 0 or more", req.Depth)
	}
	for _, c := range req.ID {
		if c <= ' ' || c > '~' {
			return errors.New("id must be printable ASCII without spaces")
		}
	}
	return nil
}

// StatusReport is the answer of GET /v1/status and what `hookd status`
// prints: the engine's live state and a digest of the metrics since the
// daemon started.
type StatusReport struct {
	engine.Summary                      // in_flight, queued (run ids)
	Running        []engine.RunProgress `json:"running"` // the runs in flight: hook, start, steps done, the current one
	PID            int                  `json:"pid"`
	Uptime         string               `json:"uptime"`
	OverdueGrace   string               `json:"overdue_grace"`
	Overdue        []string             `json:"overdue"`        // periodic hooks past due by more than the grace (the hookd_hooks_overdue gauge)
	Runs           CountsBy             `json:"runs"`           // hook -> status -> count
	Skips          CountsBy             `json:"skips"`          // hook -> reason -> count
	ShortCircuits  Counts               `json:"short_circuits"` // hook -> completed runs that needed no model
	CheckFailed    CountsBy             `json:"check_failed"`   // hook -> status -> runs whose check did not pass (engine/check.go)
	Drops          CountsBy             `json:"drops"`          // hook -> reason -> count
	Durations      map[string]Dist      `json:"durations"`      // hook -> run duration
	Lateness       map[string]Dist      `json:"lateness"`       // hook -> fire lateness
	Tokens         CountsBy             `json:"tokens"`         // hook -> kind -> count
	ToolCalls      CountsBy             `json:"tool_calls"`     // tool -> outcome -> count
	Events         Counts               `json:"events"`         // source -> count
	Notifications  Counts               `json:"notifications"`  // outcome -> count
	Database       *DBReport            `json:"database,omitempty"`
	Cluster        *ClusterReport       `json:"cluster,omitempty"` // the nodes sharing a PostgreSQL database; absent on SQLite
	Sandbox        *SandboxReport       `json:"sandbox"`           // which containment the hooks' processes get (sandbox.go)
}

// DBReport is the database's size and the last prune, in /v1/status. On
// PostgreSQL, Bytes is pg_database_size (the WAL and free space are the
// server's, not reported).
type DBReport struct {
	Path string `json:"path"` // the SQLite file, or the PostgreSQL URL without its password
	Kind string `json:"kind"` // sqlite or postgres
	engine.StoreSize
	LastPrune *PruneReport `json:"last_prune,omitempty"` // nil before the first since the start
	Error     string       `json:"error,omitempty"`      // why the size is not known (a stalled store)
}

type (
	Counts   map[string]float64
	CountsBy map[string]Counts
)

// Dist digests a histogram: how many, the mean and the 95th percentile
// (the upper bound of the bucket it falls in), in seconds.
type Dist struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean_seconds"`
	P95   float64 `json:"p95_seconds"` // +Inf is reported as -1
}

// ClusterReport is the answer of GET /v1/nodes and "cluster" in
// /v1/status: the hookd nodes sharing the PostgreSQL database, which one
// schedules, and the hooks whose files differ between live nodes.
type ClusterReport struct {
	Scheduler      string       `json:"scheduler"` // the node holding the scheduler lease; "" when none does
	Nodes          []NodeReport `json:"nodes"`
	DifferingHooks []HookDrift  `json:"differing_hooks"` // hooks whose versions differ between live nodes
}

// NodeReport is one node.
type NodeReport struct {
	Name          string    `json:"name"`
	Alive         bool      `json:"alive"`     // its latest heartbeat is within the timeout
	Scheduler     bool      `json:"scheduler"` // it holds the scheduler lease
	Running       int       `json:"running"`   // runs it holds running
	MaxConcurrent int       `json:"max_concurrent"`
	Heartbeat     time.Time `json:"heartbeat"`     // its latest, on the database's clock
	HeartbeatAge  string    `json:"heartbeat_age"` // how long ago, on the database's clock
	Started       time.Time `json:"started"`
	Hooks         int       `json:"hooks"` // hooks it loaded; -1 when it never reported them
}

// HookDrift is a hook whose version is not the same on every live node:
// node name to its version ("" when the node lacks the hook).
type HookDrift struct {
	Hook     string            `json:"hook"`
	Versions map[string]string `json:"versions"`
}

// PruneReport is one prune: what it deleted, when, and its error if any.
// It is the answer of POST /v1/prune and the last prune in /v1/status.
type PruneReport struct {
	At time.Time `json:"at"`
	engine.PruneStats
	Error string `json:"error,omitempty"`
}

// PruneRequest is the body of POST /v1/prune.
type PruneRequest struct {
	DryRun bool `json:"dry_run"`
}

// UILogin is the answer of POST /v1/ui/login.
type UILogin struct {
	URL     string `json:"url"`
	Expires string `json:"expires"`
}

// SandboxReport is which containment the daemon's processes get, in
// /v1/status and `hookd status`.
type SandboxReport struct {
	// Contained: files and the network can be confined, so hooks that
	// take untrusted input run.
	Contained bool     `json:"contained"`
	Off       bool     `json:"off"`          // hookd.yaml sets sandbox: off
	Landlock  int      `json:"landlock_abi"` // 0: none
	FilesOK   bool     `json:"files_ok"`
	NetworkOK bool     `json:"network_ok"`
	CgroupsOK bool     `json:"cgroups_ok"`
	LimitsOK  bool     `json:"limits_ok"`
	Lines     []string `json:"lines"` // as the start-up log says them
	// Hooks are the hooks the sandbox cannot serve as they ask, with
	// what it cannot give (engine.HookStatus.Sandbox).
	Hooks map[string]string `json:"hooks,omitempty"`
}

func NewSandboxReport(st sandbox.Status) *SandboxReport {
	return &SandboxReport{Contained: st.Contained(), Off: st.Off, Landlock: st.Landlock, FilesOK: st.FilesOK,
		NetworkOK: st.NetworkOK, CgroupsOK: st.CgroupsOK, LimitsOK: st.LimitsOK, Lines: st.Lines()}
}

// Event is an event as the API shows it.
type Event struct {
	Seq    int64          `json:"seq"`
	ID     string         `json:"id"`
	Type   string         `json:"type"`
	Source string         `json:"source"`
	Time   time.Time      `json:"time"`
	Depth  int            `json:"depth"`
	Data   map[string]any `json:"data"`
	// Fate is what became of the event once dispatched (absent before,
	// and for hookd's own events).
	Fate *engine.EventFate `json:"fate,omitempty"`
}

func EventOf(ev *engine.Event) Event {
	data := ev.Data
	if data == nil {
		data = map[string]any{}
	}
	return Event{Seq: ev.Seq, ID: ev.ID, Type: ev.Type, Source: ev.Source, Time: ev.Time, Depth: ev.Depth, Data: data, Fate: ev.Fate}
}

// DBWhere is the database as `hookd status` shows it.
type DBWhere struct {
	Kind string `json:"kind"` // sqlite or postgres
	Name string `json:"name"` // the file, or the URL without its password
}

// SocketPath is where the daemon for db listens: next to it, named after
// it (.hookd/hookd.db -> .hookd/hookd.sock), so two databases in one
// directory never share a socket.
func SocketPath(db string) string {
	return strings.TrimSuffix(db, filepath.Ext(db)) + ".sock"
}
