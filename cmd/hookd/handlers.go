package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/hookd/hookd/daemon"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/handlers"
	"github.com/hookd/hookd/internal/human"
)

// builtinHandlers registers the lifecycle handlers hookd has in Go. It has
// none yet; an embedding program registers its own on Engine.Lifecycle().
func builtinHandlers(*engine.Registry) {}

func cmdHandlers(c *cli, args []string) int {
	fs := c.flags()
	asJSON := fs.Bool("json", false, "print JSON")
	_, d, code, ok := c.setup(fs, args, 0, 0)
	if !ok {
		return code
	}
	_, hs, errs, err := daemon.LoadAll(d)
	if err != nil {
		return c.errorf("%v", err)
	}
	for _, e := range errs {
		fmt.Fprintln(c.stderr, c.shortErr(e))
	}
	reg := engine.NewRegistry()
	builtinHandlers(reg)
	handlers.NewSet(reg, nil).Apply(hs, nil)
	list := reg.List()
	if *asJSON {
		if list == nil {
			list = []engine.Registration{}
		}
		if code := c.printJSON(struct {
			Handlers []engine.Registration `json:"handlers"`
		}{list}); code != exitOK {
			return code
		}
	} else if len(list) == 0 {
		fmt.Fprintf(c.stdout, "no lifecycle handlers (files with on: in %s)\n", c.short(d.HooksDir))
	} else {
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POINT\tMODEL\tPRIORITY\tLABEL\tPLUGIN\tON_ERROR\tTIMEOUT\tSOURCE")
		for _, r := range list {
			policy, plugin, src, timeout := "fail_open", r.Plugin, r.Source, "-"
			if r.FailClosed {
				policy = "fail_closed"
			}
			if plugin == "" {
				plugin = "-"
			}
			if src == "" {
				src = "builtin"
			}
			if r.Timeout > 0 {
				timeout = human.Exact(r.Timeout)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Point, r.Model, r.Priority, r.Label, plugin, policy, timeout, src)
		}
		tw.Flush()
	}
	if len(errs) > 0 {
		return exitError
	}
	return exitOK
}
