package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/daemon"
	"github.com/hookd/hookd/internal/human"
)

func cmdPrune(c *cli, args []string) int {
	fs := c.flags()
	dryRun := fs.Bool("dry-run", false, "count what would be deleted; delete nothing")
	asJSON := fs.Bool("json", false, "print JSON")
	waitLock := waitLockFlag(fs)
	_, d, code, ok := c.setup(fs, args, 0, 0)
	if !ok {
		return code
	}
	ctx := context.Background()
	// Through the daemon, or with none here, holding the lock, with the
	// retention of hookd.yaml and of the hooks that load.
	var rep *api.PruneReport
	cl, code, done := c.reach(ctx, d, *waitLock, func() (err error) {
		rep, err = daemon.Prune(ctx, d, c.name, *dryRun, func(err error) { fmt.Fprintf(c.stderr, "hookd prune: %v (its own retention does not apply)\n", err) })
		return err
	})
	if done {
		return code
	}
	if cl != nil {
		rep = &api.PruneReport{}
		if err := cl.Do(ctx, "POST", "/v1/prune", api.PruneRequest{DryRun: *dryRun}, rep); err != nil {
			return c.errorf("%v", err)
		}
	}
	if *asJSON {
		return c.printJSON(rep)
	}
	printPrune(c.stdout, rep)
	return exitOK
}

func printPrune(w io.Writer, rep *api.PruneReport) {
	verb := "deleted"
	if rep.DryRun {
		verb = "would delete"
	}
	fmt.Fprintf(w, "%s %d runs, %d skip/drop records, %d events", verb, rep.Runs, rep.Skipped, rep.Events)
	if !rep.DryRun {
		fmt.Fprintf(w, "; freed %s", human.Size(rep.FreedBytes))
	}
	fmt.Fprintf(w, " (%s)\n", rep.Took.Round(time.Millisecond))
}
