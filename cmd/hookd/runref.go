package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
)

// resolveRun finds the run that ref names, for `hookd run`: "last" (the
// newest run record), a run id, a hook's name (its newest run record),
// or a unique prefix of a run id (in any case).
func (c *cli) resolveRun(ctx context.Context, d *config.Daemon, db engine.Store, ref string) (*engine.Run, error) {
	if ref == "last" {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(runs) == 0 {
			return nil, errors.New("no runs yet")
		}
		return runs[0], nil
	}
	r, err := db.GetRun(ctx, ref)
	if err == nil || !errors.Is(err, engine.ErrNotFound) {
		return r, err
	}
	runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: ref, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(runs) == 1 {
		return runs[0], nil
	}
	if _, known := c.knownHook(d, ref); known {
		return nil, fmt.Errorf("hook %s has no runs yet", ref)
	}
	const shown = 5
	ids, err := db.RunIDsWithPrefix(ctx, strings.ToUpper(ref), shown+1)
	if err != nil {
		return nil, err
	}
	switch {
	case len(ids) == 1:
		return db.GetRun(ctx, ids[0])
	case len(ids) > shown:
		return nil, fmt.Errorf("run id prefix %s is ambiguous: it begins %s, … (give more characters)", ref, strings.Join(ids[:shown], ", "))
	case len(ids) > 1:
		return nil, fmt.Errorf("run id prefix %s is ambiguous: it begins %s (give more characters)", ref, strings.Join(ids, ", "))
	}
	return nil, fmt.Errorf("no run %s: not a run id, the start of one, or a hook with runs (see `hookd runs`)", ref)
}
