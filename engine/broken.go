package engine

import (
	"context"
	"slices"
	"strconv"
	"strings"
)

// BrokenFile is a file of the hooks directory that did not load, with
// why. Like a failed unit of systemd it stays visible — in the hooks'
// listing (Engine.Hooks), in the summary (Engine.Summary, which hookd
// status counts) and in the metrics — until it loads.
type BrokenFile struct {
	File string `json:"file"`
	// Hook is the hook the file defines: its name: when that was read,
	// else the file's name without its extension.
	Hook string `json:"hook"`
	// Errors are the file's problems, each FILE:LINE: FIELD: MESSAGE.
	Errors []string `json:"errors"`
	// Previous is the version (Source.Version) of the hook still loaded
	// from this file, whose schedule is kept while the file does not
	// load, each of its triggers skipped (GateInvalidFile); "" when none
	// is (the hook is not scheduled).
	Previous string `json:"previous,omitempty"`
	// Running is set while a run of the previous version, started before
	// the file broke, is in flight: it finishes as it began.
	Running bool `json:"running,omitempty"`
}

// String says what is wrong in one line: the first error, how many more,
// and what becomes of the previous version of the hook meanwhile.
func (b BrokenFile) String() string {
	var sb strings.Builder
	switch {
	case b.Previous != "" && b.Running:
		sb.WriteString("running the previous version (" + b.Previous + "); ")
	case b.Previous != "":
		sb.WriteString("previous version (" + b.Previous + ") kept on schedule, each trigger skipped (" + GateInvalidFile + "); ")
	}
	sb.WriteString("file error: ")
	sb.WriteString(b.firstError())
	return sb.String()
}

// firstError is the file's first error, and how many more there are.
func (b BrokenFile) firstError() string {
	msg := b.File + ": does not load"
	if len(b.Errors) > 0 {
		msg = b.Errors[0]
	}
	if n := len(b.Errors) - 1; n > 0 {
		msg += " (and " + strconv.Itoa(n) + " more)"
	}
	return msg
}

// invalidGate refuses a trigger of h when h is the previous version of a
// hook whose file no longer loads (SetBroken): the version it would run
// is not what its file says.
func (s *state) invalidGate(h *Hook) *GateError {
	i, ok := s.invalid[h]
	if !ok {
		return nil
	}
	return &GateError{Gate: GateInvalidFile, Hook: h.Name, Detail: s.broken[i].firstError() +
		"; the file of hook " + h.Name + " does not load, so its triggers are skipped until it does (hookd validate shows why)"}
}

// SetBroken replaces the engine's list of hook files that did not load;
// whoever loads the hooks directory calls it after each Reload. A file
// that defined a hook still loaded (a reload kept its previous version)
// is marked so (Previous): that version keeps its schedule, but each of
// its triggers is refused (GateInvalidFile) until a Reload replaces it.
func (e *Engine) SetBroken(ctx context.Context, files []BrokenFile) error {
	files = slices.Clone(files)
	for i := range files {
		files[i].Errors = slices.Clone(files[i].Errors)
	}
	slices.SortStableFunc(files, func(a, b BrokenFile) int { return strings.Compare(a.File, b.File) })
	return e.do(ctx, func(s *state) {
		s.broken, s.invalid = files, nil
		byFile := make(map[string]int, len(files))
		for i, f := range files {
			byFile[f.File] = i
		}
		for _, ent := range s.hooks {
			if i, ok := byFile[ent.hook.Source.File]; ok {
				if s.invalid == nil {
					s.invalid = map[*Hook]int{}
				}
				s.invalid[ent.hook] = i
			}
		}
	})
}

// brokenFiles returns the broken files with Previous filled in from the
// hooks loaded now, by file.
func (s *state) brokenFiles() []BrokenFile {
	if len(s.broken) == 0 {
		return nil
	}
	out := slices.Clone(s.broken)
	byFile := make(map[string]int, len(out))
	for i := range out {
		out[i].Previous, out[i].Running = "", false
		byFile[out[i].File] = i
	}
	for _, ent := range s.hooks {
		if i, ok := byFile[ent.hook.Source.File]; ok {
			out[i].Previous = ent.hook.Source.Version
			out[i].Running = ent.active != nil
		}
	}
	return out
}
