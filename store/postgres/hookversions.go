package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/hookd/hookd/engine"
	"github.com/jackc/pgx/v5"
)

// Hook versions across nodes. Every node loads its own hooks.d; a hook's
// version is engine.Source.Version, a short hash of its file. Nodes
// report the versions they loaded (ReportHookVersions), a run records the
// version of the hook that triggered it (engine.Run.HookVersion, column
// hook_version), and a node claims only the runs of the hooks it has, at
// the version it has (ClaimRunsVersions): a node whose hooks.d differs
// does not run work for the differing hooks. DifferingHooks names them,
// for the loud warning of `hookd status`.

// sqlHookVersions is migration 3.
const sqlHookVersions = `
CREATE TABLE node_hooks (
	node    TEXT NOT NULL,
	hook    TEXT NOT NULL,
	version TEXT NOT NULL,
	PRIMARY KEY (node, hook)
);
ALTER TABLE nodes ADD COLUMN hooks_reported_at TIMESTAMPTZ;
ALTER TABLE runs ADD COLUMN hook_version TEXT NOT NULL DEFAULT '';
`

// sqlVersionMatch selects, in a query on runs, the runs of the hooks in
// $3 (names) at the version at the same index in $4, or of those hooks
// with no recorded version; every run when $3 is NULL.
const sqlVersionMatch = `($3::text[] IS NULL OR EXISTS (
	SELECT 1 FROM unnest($3::text[], $4::text[]) AS v(hook, version)
	WHERE v.hook = runs.hook AND (runs.hook_version = '' OR runs.hook_version = v.version)))`

// versionArrays returns versions as two arrays, hooks in name order and
// their versions; nil ones for a nil map, which selects every run.
func versionArrays(versions map[string]string) (hooks, vers []string) {
	if versions == nil {
		return nil, nil
	}
	hooks = slices.AppendSeq(make([]string, 0, len(versions)), maps.Keys(versions)) // not nil: an empty map selects none
	slices.Sort(hooks)
	vers = make([]string, len(hooks))
	for i, h := range hooks {
		vers[i] = versions[h]
	}
	return hooks, vers
}

// ClaimRunsVersions is ClaimRuns for a node whose hooks are versions
// (hook name to engine.Source.Version): it claims only the queued runs of
// those hooks whose recorded version is the node's (or that have none
// recorded: runs queued by a hookd that did not record versions). Runs of
// a hook the node lacks, or has at another version, stay queued for a
// node that has it. A node with no hooks (a nil or empty map) claims
// none; ClaimRuns claims runs of any hook and version.
func (d *DB) ClaimRunsVersions(ctx context.Context, node string, n int, versions map[string]string) ([]*engine.Run, error) {
	if versions == nil {
		versions = map[string]string{}
	}
	return d.claimRuns(ctx, node, n, versions)
}

// ReportHookVersions records the hooks node has loaded, hook name to
// version, replacing what it reported before. A node reports at start and
// after each reload. It registers the node if no heartbeat did yet.
func (d *DB) ReportHookVersions(ctx context.Context, node string, versions map[string]string) error {
	if versions == nil {
		versions = map[string]string{}
	}
	hooks, vers := versionArrays(versions)
	err := d.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO nodes (name, hooks_reported_at) VALUES ($1, now())
			ON CONFLICT (name) DO UPDATE SET hooks_reported_at = now()`, node); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM node_hooks WHERE node = $1`, node); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO node_hooks (node, hook, version)
			SELECT $1, h, v FROM unnest($2::text[], $3::text[]) AS t(h, v)`, node, hooks, vers)
		return err
	})
	if err != nil {
		return fmt.Errorf("report hook versions of node %s: %w", node, err)
	}
	return nil
}

// HookDrift is a hook whose version is not the same on every live node.
type HookDrift struct {
	Hook string
	// Versions maps each live node that reported its hooks to its version
	// of the hook; "" when the node has no such hook.
	Versions map[string]string
}

// DifferingHooks returns, by hook name, the hooks whose versions differ
// between the live nodes among nodes that reported their hooks (a node
// lacking a hook others have counts as differing). Such a hook's runs are
// run only by the nodes at the version that queued them.
func DifferingHooks(nodes []Node) []HookDrift {
	var live []Node
	names := map[string]bool{}
	for _, n := range nodes {
		if n.Alive && n.Hooks != nil {
			live = append(live, n)
			for h := range n.Hooks {
				names[h] = true
			}
		}
	}
	var out []HookDrift
	for _, h := range slices.Sorted(maps.Keys(names)) {
		vs := make(map[string]string, len(live))
		same := true
		for _, n := range live {
			vs[n.Name] = n.Hooks[h]
			same = same && vs[n.Name] == live[0].Hooks[h]
		}
		if !same {
			out = append(out, HookDrift{Hook: h, Versions: vs})
		}
	}
	return out
}
