package main

import (
	"context"

	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/daemon"

	// also registers the step kinds
	_ "time/tzdata" // time zones on machines without zone files
)

// settings resolves hookd.yaml and the flags that override it.
func (c *cli) settings() (*config.Daemon, error) {
	path, explicit := c.configPath, c.configPath != ""
	if !explicit {
		path = "hookd.yaml"
	}
	path = c.path(path)
	if _, err := os.Stat(path); explicit && err != nil {
		return nil, fmt.Errorf("settings file: %w", err)
	}
	d, err := config.LoadDaemonFile(path)
	if err != nil {
		return nil, err
	}
	if v := c.env(config.DatabaseEnv); v != "" {
		d.SetDatabase(v)
	}
	if c.dbPath != "" {
		db := c.dbPath
		if !strings.Contains(db, "://") {
			db = c.path(db)
		}
		d.SetDatabase(db)
	}
	if c.hooksDir != "" {
		d.HooksDir = c.path(c.hooksDir)
	}
	if c.dir == "" {
		// Paths stay absolute in a host's own directory: the process's
		// working directory is not it.
		d.HooksDir = shortPath(d.HooksDir)
		d.DB = shortPath(d.DB)
	}
	return d, nil
}

// shortPath makes a path under the working directory relative, so
// messages name files the way the user typed them.
func shortPath(p string) string {
	wd, err := os.Getwd()
	if err != nil || !filepath.IsAbs(p) {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// openLocal takes the database lock, opens the store, loads the hooks and
// builds and starts an engine. manual engines fire only what they are
// told to.
func (c *cli) openLocal(d *config.Daemon, log *slog.Logger, manual bool) (*daemon.Local, error) {
	l, err := daemon.Open(context.Background(), d, c.name, log, manual)
	if err != nil {
		return nil, err
	}
	if err := l.Engine.Start(context.Background()); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
