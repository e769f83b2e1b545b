package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/api/client"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/daemon"
)

// waitLockFlag adds --wait-lock to a command that takes the database's
// lock when no daemon answers (fire, emit, pause, resume, prune).
func waitLockFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("wait-lock", 0, "while another hookd holds the database (a daemon still starting, a command run without a daemon), "+
		"wait for it up to this long instead of exiting 75")
}

// lockPoll is how often a command waiting for the database (--wait-lock)
// tries the daemon's socket and the lock again.
const lockPoll = 100 * time.Millisecond

// reach is how a command that writes the database gets to it: through
// the daemon when one answers on its socket (cl is set), else by take,
// which takes the database's lock and does the work without a daemon
// (cl nil, done false). When another hookd holds the lock and will let
// it go (daemon.Busy.Transient: a daemon still starting, a command run
// without a daemon) the command exits 75 saying so, or, with wait
// (--wait-lock), tries the socket and the lock again until wait is
// over, probing the lock (daemon.TryLock) before it calls take again.
// Any other error ends the command (done, with its exit code).
func (c *cli) reach(ctx context.Context, d *config.Daemon, wait time.Duration, take func() error) (cl *client.Client, code int, done bool) {
	deadline := time.Now().Add(wait)
	waiting := false
	for {
		// With --wait-lock, a daemon that does not answer does not keep
		// the command past the time it was given.
		dctx, cancel := ctx, context.CancelFunc(func() {})
		if wait > 0 {
			dctx, cancel = context.WithTimeout(ctx, max(time.Until(deadline), lockPoll))
		}
		cl := client.DialContext(dctx, d.DB)
		cancel()
		if cl != nil {
			return cl, 0, false
		}
		var err error
		if waiting {
			err = daemon.TryLock(ctx, d, c.name)
		}
		if err == nil {
			if err = take(); err == nil {
				return nil, 0, false
			}
		}
		busy := daemon.BusyOf(err, d)
		if !busy.Transient() {
			return nil, c.errorf("%v", err), true
		}
		if !time.Now().Before(deadline) {
			if waiting {
				fmt.Fprintf(c.stderr, "hookd %s: waited %s: %s\n", c.name, wait, busyText(busy, d))
			} else {
				fmt.Fprintf(c.stderr, "hookd %s: %s; try again, or wait for it with --wait-lock DURATION\n", c.name, busyText(busy, d))
			}
			return nil, exitRefused, true
		}
		if !waiting {
			waiting = true
			fmt.Fprintf(c.stderr, "hookd %s: %s; waiting up to %s\n", c.name, busyText(busy, d), wait)
		}
		select {
		case <-ctx.Done():
			return nil, c.errorf("%v", context.Cause(ctx)), true
		case <-time.After(lockPoll):
		}
	}
}

// busyText says who holds the database and why that passes.
func busyText(b daemon.Busy, d *config.Daemon) string {
	who := b.Who
	switch b.Kind {
	case daemon.BusyStarting:
		return fmt.Sprintf("hookd is still starting (%s): it holds database %s and does not answer on %s yet", who, b.Database, api.SocketPath(d.DB))
	case daemon.BusyCommand:
		return fmt.Sprintf("database %s is in use by a hookd command run without a daemon (%s), which ends by itself", b.Database, who)
	}
	if who == "" {
		who = "pid unknown"
	}
	return fmt.Sprintf("database %s is in use by another hookd (%s) that does not answer on %s", b.Database, who, api.SocketPath(d.DB))
}

// reachOrOpen is reach for fire and emit, whose way without a daemon is
// an engine of this process on the locked database (manual: it fires
// only what it is told to): the client, or that engine.
func (c *cli) reachOrOpen(ctx context.Context, d *config.Daemon, wait time.Duration) (cl *client.Client, l *daemon.Local, code int, done bool) {
	cl, code, done = c.reach(ctx, d, wait, func() (err error) {
		l, err = c.openLocal(d, daemon.NewLogger(d.LogFormat, c.log, slog.LevelWarn), true)
		return err
	})
	return cl, l, code, done
}

// reachOrLock is reach for the commands whose way without a daemon is a
// write to the store alone (pause, resume, replay's tokens): the client,
// or the database locked and opened.
func (c *cli) reachOrLock(ctx context.Context, d *config.Daemon, wait time.Duration) (cl *client.Client, o *daemon.Opened, code int, done bool) {
	cl, code, done = c.reach(ctx, d, wait, func() (err error) {
		o, err = daemon.LockAndOpen(ctx, d, c.name, "", nil)
		return err
	})
	return cl, o, code, done
}
