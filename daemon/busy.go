package daemon

import (
	"context"
	"errors"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/store/postgres"
)

// BusyKind says who holds a database's lock that a command could not
// take, and whether waiting can help.
type BusyKind int

// Busy kinds.
const (
	NotBusy      BusyKind = iota // the error is no lock refusal
	BusyStarting                 // a daemon holds it but does not answer on its socket yet: it is still starting
	BusyCommand                  // a hookd command run without a daemon holds it; it ends by itself
	BusyUnknown                  // another hookd, which the lock does not name, holds it
	BusyHeld                     // a daemon that is no local one (a node elsewhere), or a process an exited hookd started, holds it: it does not end by itself
)

// Busy is a lock refusal as a command reports it: who holds the
// database, and whether trying again can succeed.
type Busy struct {
	Kind     BusyKind
	Who      string // the holder: "hookd fire, pid 1234", "pid 1234"; "" when unknown
	Database string // the database, without a password
}

// Transient reports whether the holder lets the lock go by itself, so
// that the same command succeeds later (engine.ExitTryAgain): a daemon
// still starting (it then answers on its socket), a command, or an
// unnamed hookd.
func (b Busy) Transient() bool {
	return b.Kind == BusyStarting || b.Kind == BusyCommand || b.Kind == BusyUnknown
}

// BusyOf classifies an error of taking the lock of d's database (Open,
// LockAndOpen, Prune) for a command that found no daemon answering on
// its socket: the one place that reads who holds a lock.
func BusyOf(err error, d *config.Daemon) Busy {
	b := Busy{Database: DatabaseName(d)}
	var le *store.LockError
	var ce *postgres.CommandError
	switch {
	case errors.As(err, &le):
		b.Who = le.Who()
		switch {
		case le.Gone:
			b.Kind = BusyHeld
		case le.Holder == store.Daemon:
			b.Kind = BusyStarting
		case le.Transient():
			b.Kind = BusyCommand
		default:
			b.Kind = BusyUnknown
		}
	case errors.As(err, &ce):
		b.Kind = BusyHeld
		if ce.Transient() {
			b.Kind, b.Who = BusyCommand, ce.Who()
		}
	case errors.Is(err, engine.ErrLocked):
		b.Kind = BusyHeld // PostgreSQL: the nodes of a cluster hold it
	}
	return b
}

// TryLock takes the lock of d's database as the command holder and lets
// it go at once: nil when it is free now, else the refusal (BusyOf reads
// it). A command waiting for the lock (--wait-lock) probes with it, so
// that it builds what it needs only once the lock is free.
func TryLock(ctx context.Context, d *config.Daemon, holder string) error {
	if d.Database != "" {
		ctx, cancel := context.WithTimeout(ctx, dbTimeout)
		defer cancel()
		l, err := postgres.Lock(ctx, d.Database, holder)
		if err != nil {
			return err
		}
		return l.Unlock()
	}
	l, err := store.Lock(d.DB, holder)
	if err != nil {
		return err
	}
	return l.Unlock()
}
