package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hookd/hookd/engine"
)

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
	log := newLogger(d.LogFormat, os.Stderr, slog.LevelInfo)

	l, err := c.openLocal(d, log, false)
	if err != nil {
		if errors.Is(err, engine.ErrLocked) {
			return c.errorf("%v", err)
		}
		return c.errorf("start: %v", err)
	}
	defer l.close()

	abs, err := filepath.Abs(d.DB)
	if err != nil {
		return c.errorf("%v", err)
	}
	api := &apiServer{eng: l.eng, st: l.db, db: abs, log: log}
	sock := socketPath(d.DB)
	srv, err := api.serveUnix(sock)
	if err != nil {
		return c.errorf("%v", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		os.Remove(sock)
	}()
	log.Info("hookd serving", "hooks", len(l.hooks), "dir", d.HooksDir, "db", d.DB, "socket", sock,
		"max_concurrent", d.MaxConcurrent)

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	sig := <-sigs
	log.Info("stopping: no new runs; waiting for runs in flight (signal again to force)", "signal", sig.String(), "grace", d.Grace)
	done := make(chan struct{})
	go func() { l.eng.Stop(); close(done) }()
	select {
	case <-done:
		log.Info("hookd stopped")
		return exitOK
	case <-sigs:
		// Cancel the runs (their process groups are killed) and give them
		// a moment to be recorded; what is still running then is marked
		// interrupted at the next start.
		log.Warn("forced stop: cancelling runs in flight")
		l.eng.Abort()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			log.Warn("runs still in flight will be recorded as interrupted at the next start")
		}
		os.Remove(sock)
		os.Exit(exitError)
	}
	return exitOK
}
