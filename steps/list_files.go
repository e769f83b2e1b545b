package steps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/glob"
)

// DefaultMaxListFiles is how many files list_files reports when the step
// sets no max_files.
const DefaultMaxListFiles = 1000

func init() {
	engine.RegisterStep("list_files", engine.DeclaredKind{Build: newListFiles,
		Fields: []string{"files", "count", "truncated", "path", "content", "directory"}})
}

type listFilesConfig struct {
	Path       string   `yaml:"path"`
	Recursive  bool     `yaml:"recursive"`
	Extensions []string `yaml:"extensions"`
	Include    []string `yaml:"include"`
	Ignore     []string `yaml:"ignore"`
	MaxFiles   int      `yaml:"max_files"`
	Hidden     bool     `yaml:"hidden"`
	Roots      []string `yaml:"roots"`
}

// listFilesStep lists the files of a directory inside the hook's workdir
// or an extra root.
type listFilesStep struct {
	def        *engine.StepDef
	path       string // may hold placeholders; "." by default
	recursive  bool
	extensions []string // lower case, with the dot
	include    []*glob.PathPattern
	ignore     []*glob.PathPattern
	maxFiles   int
	hidden     bool
	roots      []string
}

func newListFiles(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c listFilesConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	s := &listFilesStep{def: def, path: c.Path, recursive: c.Recursive, maxFiles: c.MaxFiles, hidden: c.Hidden}
	if s.path == "" {
		s.path = "."
	}
	if err := checkPathTemplate(cfg, "path", s.path, true); err != nil {
		return nil, err
	}
	for i, e := range c.Extensions {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" || e == "." || strings.ContainsAny(e, "/*?[") {
			return nil, fieldErr(cfg, fmt.Sprintf("extensions[%d]", i), "%q is not a file extension (like .md)", c.Extensions[i])
		}
		if !strings.HasPrefix(e, ".") {
			e = "." + e
		}
		s.extensions = append(s.extensions, e)
	}
	for _, l := range []struct {
		field string
		in    []string
		out   *[]*glob.PathPattern
	}{{"include", c.Include, &s.include}, {"ignore", c.Ignore, &s.ignore}} {
		for i, p := range l.in {
			g, err := glob.CompilePath(p)
			if err != nil {
				return nil, fieldErr(cfg, fmt.Sprintf("%s[%d]", l.field, i), "%v", err)
			}
			*l.out = append(*l.out, g)
		}
	}
	if c.MaxFiles < 0 {
		return nil, fieldErr(cfg, "max_files", "must be > 0 (got %d)", c.MaxFiles)
	}
	if s.maxFiles == 0 {
		s.maxFiles = DefaultMaxListFiles
	}
	roots, err := checkRoots(cfg, c.Roots)
	if err != nil {
		return nil, err
	}
	s.roots = roots
	return s, nil
}

// Templates returns the strings of the step that may hold placeholders.
func (s *listFilesStep) Templates() []string { return []string{s.path} }

// errEnough stops the walk once one file more than max_files was found.
var errEnough = errors.New("enough files")

// Run lists the files. A path that is missing, not a directory or outside
// the roots is an error.
func (s *listFilesStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.def, map[string]any{"files": []any{}, "path": "", "content": "", "directory": ""})
	res.Count = new(0)
	p, err := engine.Expand(s.path, scopeOf(env), nil)
	if err != nil {
		return fail(res, fmt.Errorf("path: %w", err))
	}
	roots, err := NewRoots(env.Workdir, s.roots)
	if err != nil {
		return fail(res, err)
	}
	base, err := roots.Resolve(p)
	if err != nil {
		return fail(res, err)
	}
	if fi, err := os.Stat(base); err != nil {
		return fail(res, err)
	} else if !fi.IsDir() {
		return fail(res, fmt.Errorf("%q is not a directory", p))
	}
	res.Fields["path"] = roots.Rel(base)
	res.Fields["directory"] = res.Fields["path"] // agent-queue's name

	var (
		files     []any
		lines     []string
		truncated bool
	)
	err = filepath.WalkDir(base, func(abs string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return context.Cause(ctx)
		}
		if abs == base {
			return err // an unreadable base is an error
		}
		rel, _ := filepath.Rel(base, abs)
		rel = filepath.ToSlash(rel)
		if !s.hidden && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if err != nil {
			if d != nil && d.IsDir() {
				return filepath.SkipDir // unreadable: left out
			}
			return nil
		}
		if d.IsDir() {
			if !s.recursive || s.ignored(rel, true) {
				return filepath.SkipDir
			}
			return nil
		}
		info, ok := s.fileInfo(roots, abs, d)
		if !ok || s.ignored(rel, false) || !s.included(rel) {
			return nil
		}
		if len(files) == s.maxFiles {
			truncated = true
			return errEnough
		}
		shown := roots.Rel(abs)
		files = append(files, map[string]any{
			"path":  shown,
			"size":  info.Size(),
			"mtime": info.ModTime().UTC().Format(time.RFC3339),
		})
		lines = append(lines, shown)
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return fail(res, fmt.Errorf("list %q: %w", p, err))
	}
	if files == nil {
		files = []any{}
	}
	res.Fields["files"] = files
	res.Count, res.Truncated = new(len(files)), truncated
	if len(lines) > 0 {
		res.Output = strings.Join(lines, "\n") + "\n"
	}
	res.Fields["content"] = res.Output // agent-queue's name of the listing
	return done(res)
}

// fileInfo returns the information of a regular file, or of a symbolic
// link's target when that is a regular file inside the roots.
func (s *listFilesStep) fileInfo(roots *Roots, abs string, d fs.DirEntry) (fs.FileInfo, bool) {
	switch {
	case d.Type().IsRegular():
		info, err := d.Info()
		return info, err == nil
	case d.Type()&fs.ModeSymlink != 0:
		real, err := roots.Resolve(abs)
		if err != nil {
			return nil, false
		}
		info, err := os.Stat(real)
		return info, err == nil && info.Mode().IsRegular()
	}
	return nil, false
}

func (s *listFilesStep) ignored(rel string, isDir bool) bool {
	for _, g := range s.ignore {
		if g.Match(rel, isDir) {
			return true
		}
	}
	return false
}

func (s *listFilesStep) included(rel string) bool {
	if len(s.extensions) > 0 {
		name := strings.ToLower(rel[strings.LastIndexByte(rel, '/')+1:])
		ok := false
		for _, e := range s.extensions {
			ok = ok || strings.HasSuffix(name, e)
		}
		if !ok {
			return false
		}
	}
	if len(s.include) == 0 {
		return true
	}
	for _, g := range s.include {
		if g.Match(rel, false) {
			return true
		}
	}
	return false
}
