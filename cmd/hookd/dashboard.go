package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/api/client"
)

// The web dashboard (package dashboard) is served at / on the TCP
// listener, behind a login with the API token, and on the unix socket,
// whose permissions are its login. This file connects it to the engine
// and the store, and serves `hookd ui`'s one-time login links.

func cmdUI(c *cli, args []string) int {
	fs := c.flags()
	_, d, code, ok := c.setup(fs, args, 0, 0)
	if !ok {
		return code
	}
	cl := client.Dial(d.DB)
	if cl == nil {
		return c.errorf("hookd is not running: the dashboard is served by `hookd serve` (with listen: and an API token in hookd.yaml)")
	}
	var ans api.UILogin
	if err := cl.Do(context.Background(), "POST", "/v1/ui/login", nil, &ans); err != nil {
		var re *client.RemoteError
		if errors.As(err, &re) {
			return c.errorf("%s", re.Body.Error)
		}
		return c.errorf("%v", err)
	}
	fmt.Fprintln(c.stdout, ans.URL)
	fmt.Fprintf(c.stderr, "open it in a browser on this machine: it logs in once, until %s\n", ans.Expires)
	return exitOK
}
