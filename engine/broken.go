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
	// from this file, which runs while the file does not load; "" when
	// none is (the hook is not scheduled).
	Previous string `json:"previous,omitempty"`
}

// String says what is wrong in one line: the first error, how many more,
// and whether the previous version of the hook runs meanwhile.
func (b BrokenFile) String() string {
	var sb strings.Builder
	if b.Previous != "" {
		sb.WriteString("running the previous version (" + b.Previous + "); ")
	}
	sb.WriteString("file error: ")
	if len(b.Errors) == 0 {
		sb.WriteString(b.File + ": does not load")
	} else {
		sb.WriteString(b.Errors[0])
	}
	if n := len(b.Errors) - 1; n > 0 {
		sb.WriteString(" (and " + strconv.Itoa(n) + " more)")
	}
	return sb.String()
}

// SetBroken replaces the engine's list of hook files that did not load;
// whoever loads the hooks directory calls it with each Reload. A file
// that defined a hook still loaded (a reload kept its previous version)
// is marked so (Previous).
func (e *Engine) SetBroken(ctx context.Context, files []BrokenFile) error {
	files = slices.Clone(files)
	for i := range files {
		files[i].Errors = slices.Clone(files[i].Errors)
	}
	slices.SortStableFunc(files, func(a, b BrokenFile) int { return strings.Compare(a.File, b.File) })
	return e.do(ctx, func(s *state) { s.broken = files })
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
		out[i].Previous = ""
		byFile[out[i].File] = i
	}
	for _, ent := range s.hooks {
		if i, ok := byFile[ent.hook.Source.File]; ok {
			out[i].Previous = ent.hook.Source.Version
		}
	}
	return out
}
