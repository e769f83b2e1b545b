package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"syscall"

	"log/slog"
	"os"
	"path/filepath"
	"strings"

	_ "time/tzdata" // time zones on machines without zone files

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/daemon"
)

// ConfigEnv names the settings file for every command, as --config does.
const ConfigEnv = "HOOKD_CONFIG"

// settingsPath is the settings file a command reads: --config, else
// $HOOKD_CONFIG, else hookd.yaml of the project the working directory
// is in (findProject). explicit: the user named it, so it must exist.
func (c *cli) settingsPath() (path string, explicit bool) {
	if c.configPath != "" {
		return c.path(c.configPath), true
	}
	if v := c.env(ConfigEnv); v != "" {
		return c.path(v), true
	}
	return findProject(c.path("."))
}

// findProject is hookd.yaml of the nearest directory from dir up that
// holds one, else of the nearest that holds a hooks.d directory, not
// crossing into another file system; else hookd.yaml in dir, which need
// not exist (the defaults, relative to dir). The path it returns is dir's
// own spelling when it is dir's hookd.yaml.
func findProject(dir string) (string, bool) {
	here := filepath.Join(dir, "hookd.yaml")
	abs, err := filepath.Abs(dir)
	if err != nil {
		return here, false
	}
	var withHooks string
	for d := abs; ; {
		if fi, err := os.Stat(filepath.Join(d, "hookd.yaml")); err == nil && fi.Mode().IsRegular() {
			return relTo(dir, abs, filepath.Join(d, "hookd.yaml")), false
		}
		if withHooks == "" {
			if fi, err := os.Stat(filepath.Join(d, "hooks.d")); err == nil && fi.IsDir() {
				withHooks = filepath.Join(d, "hookd.yaml")
			}
		}
		up := filepath.Dir(d)
		if up == d || !sameFileSystem(d, up) {
			break
		}
		d = up
	}
	if withHooks != "" {
		return relTo(dir, abs, withHooks), false
	}
	return here, false
}

// relTo spells p, a file in dir (whose absolute path is abs) or above
// it, as dir's own file when it is one, so messages name it as typed.
func relTo(dir, abs, p string) string {
	if filepath.Dir(p) == abs {
		return filepath.Join(dir, filepath.Base(p))
	}
	return p
}

// sameFileSystem reports whether directories a and b are on one file
// system (the search for a project stops at a mount point).
func sameFileSystem(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	if err1 != nil || err2 != nil {
		return false
	}
	sa, ok1 := fa.Sys().(*syscall.Stat_t)
	sb, ok2 := fb.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Dev == sb.Dev
}

// readOnlyCommands read the database and hooks.d but change nothing:
// they run on what they can read of an invalid hookd.yaml.
var readOnlyCommands = []string{"list", "runs", "run", "status", "validate", "search", "next", "watch"}

func (c *cli) readOnly() bool { return slices.Contains(readOnlyCommands, c.name) }

// settings resolves hookd.yaml and the flags that override it.
func (c *cli) settings() (*config.Daemon, error) {
	path, explicit := c.settingsPath()
	if _, err := os.Stat(path); explicit && err != nil {
		return nil, fmt.Errorf("settings file: %w", err)
	}
	d, err := config.LoadDaemonFile(path)
	if err != nil {
		err = c.shortErr(err)
		if !c.readOnly() {
			return nil, err
		}
		// A command that only reads works with what it can read of a
		// broken hookd.yaml, and says so.
		var from string
		if d, from = config.LoadDaemonLenient(path); d == nil {
			return nil, err
		}
		used := c.settingsUsedText(d, from)
		c.badSettings, c.settingsUsed = err, used
		fmt.Fprintf(c.stderr, "hookd %s: %v\nhookd %s: %s\n", c.name, err, c.name, invalidSettings(c.short(path), err, used))
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
		d.SetHooksDir(c.path(c.hooksDir))
	}
	if c.dir == "" {
		// Paths stay absolute in a host's own directory: the process's
		// working directory is not it.
		d.HooksDir = shortPath(d.HooksDir)
		d.DB = shortPath(d.DB)
	}
	return d, nil
}

// settingsUsedText says what a read-only command used of a settings
// file that does not load (config.LoadDaemonLenient's d and from), with
// the paths as the user names them: "db .hookd/hookd.db, hooks_dir
// hooks.d (the defaults)". A PostgreSQL database is not named by its
// URL: it may hold a password.
func (c *cli) settingsUsedText(d *config.Daemon, from string) string {
	where := "db " + c.short(d.DB)
	if d.Database != "" {
		where = "the PostgreSQL database it names"
	}
	return fmt.Sprintf("%s, hooks_dir %s (%s)", where, c.short(d.HooksDir), from)
}

// invalidSettings says that the settings file path is invalid (at the
// line of err's first error that names one) and what a read-only command
// used instead: "hookd.yaml:3 invalid; using db .hookd/hookd.db,
// hooks_dir hooks.d (the defaults)".
func invalidSettings(path string, err error, used string) string {
	var ce *config.Error
	if errors.As(err, &ce) && ce.Line > 0 {
		path += ":" + strconv.Itoa(ce.Line)
	}
	return path + " invalid; using " + used
}

// shortPath makes a path under the working directory relative, so
// messages name files the way the user typed them.
func shortPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	return relUnder(wd, p)
}

// relUnder is p relative to dir when p is an absolute path under dir,
// else p.
func relUnder(dir, p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	if rel, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(rel, "..") {
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
