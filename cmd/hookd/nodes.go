package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hookd/hookd/api"
)

// printCluster prints the nodes of `hookd status`, and a loud warning
// when hook files differ between live nodes.
func printCluster(w io.Writer, c *api.ClusterReport) {
	alive := 0
	for _, n := range c.Nodes {
		if n.Alive {
			alive++
		}
	}
	fmt.Fprintf(w, "\nnodes:     %d, %d alive; scheduler: %s\n", len(c.Nodes), alive, orDash(c.Scheduler))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NODE\tALIVE\tSCHEDULES\tRUNNING\tLOAD\tHEARTBEAT\tHOOKS")
	for _, n := range c.Nodes {
		load := "-"
		if n.MaxConcurrent > 0 {
			load = fmt.Sprintf("%d%%", n.Running*100/n.MaxConcurrent)
		}
		hooks := "-"
		if n.Hooks >= 0 {
			hooks = fmt.Sprint(n.Hooks)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d/%d\t%s\t%s ago\t%s\n", n.Name, yesNo(n.Alive), yesNo(n.Scheduler),
			n.Running, n.MaxConcurrent, load, n.HeartbeatAge, hooks)
	}
	tw.Flush()
	if len(c.DifferingHooks) == 0 {
		return
	}
	fmt.Fprintf(w, "\n!!! WARNING: HOOK FILES DIFFER BETWEEN LIVE NODES (%d %s) !!!\n", len(c.DifferingHooks),
		plural(len(c.DifferingHooks), "hook", "hooks"))
	for _, d := range c.DifferingHooks {
		var parts []string
		for _, node := range slices.Sorted(maps.Keys(d.Versions)) {
			v := d.Versions[node]
			if v == "" {
				v = "missing"
			}
			parts = append(parts, node+" "+v)
		}
		fmt.Fprintf(w, "!!!   %s: %s\n", d.Hook, strings.Join(parts, ", "))
	}
	fmt.Fprintln(w, "!!! a node runs a hook's runs only at the version of the hook that queued them: deploy the same hooks.d on every node")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
