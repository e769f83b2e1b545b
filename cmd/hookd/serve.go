package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookd/hookd/daemon"
)

// cmdServe runs the daemon (package daemon) until SIGINT or SIGTERM; a
// second signal during the stop cancels the runs in flight.
func cmdServe(c *cli, args []string) int {
	fs := c.flags()
	logFormat := fs.String("log-format", "", "log format: text or json (default from hookd.yaml, else text)")
	_, d, code, ok := c.setup(fs, args, 0, 0)
	if !ok {
		return code
	}
	if *logFormat != "" && *logFormat != "text" && *logFormat != "json" {
		fmt.Fprintf(c.stderr, "hookd serve: --log-format must be text or json (got %q)\n", *logFormat)
		return exitUsage
	}
	if *logFormat != "" {
		d.LogFormat = *logFormat
	}
	log := daemon.NewLogger(d.LogFormat, c.log, slog.LevelInfo)

	sigs := c.signals
	if sigs == nil {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(ch)
		sigs = ch
	}
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	// SIGINT or SIGTERM while waiting for the lock held by a hookd command
	// stops the wait, and hookd exits 0: nothing had started.
	started := make(chan *daemon.Daemon, 1)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		stop(&daemon.Signal{Signal: sig})
		dm := <-started
		if dm == nil {
			return
		}
		if _, ok := <-sigs; ok {
			dm.Abort()
		}
	}()
	dm, err := daemon.New(ctx, d, daemon.Options{Log: log, Settings: c.settings, Getenv: c.env})
	if cause := context.Cause(ctx); cause != nil {
		// A signal during start-up: stop before anything runs.
		started <- nil
		if err == nil {
			dm.Close()
		}
		log.Info("hookd stopped before it started", "signal", cause.Error())
		return exitOK
	}
	started <- dm
	if err != nil {
		return c.errorf("%v", err)
	}
	err = dm.Run(ctx)
	var abandoned *daemon.AbandonedError
	switch {
	case err == nil:
		dm.Close()
		return exitOK
	case errors.Is(err, daemon.ErrAborted), errors.As(err, &abandoned):
		// The runs in flight were cancelled; what still runs is recorded
		// interrupted at the next start. Nothing more is closed.
		return exitError
	}
	dm.Close()
	return c.errorf("%v", err)
}
