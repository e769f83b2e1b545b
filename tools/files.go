package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/steps"
)

// Limits of the file tools.
const (
	readDefault  = 30_000  // bytes read_file returns unless asked for fewer
	readMax      = 30_000  // bytes read_file returns at most per call
	listDefault  = 500     // entries list_files returns unless asked
	listMax      = 2000    // entries list_files returns at most
	writeMax     = 1 << 20 // bytes write_file writes at most
	binarySample = 8 << 10 // bytes checked for NUL to call a file binary
)

func init() {
	register("read_file",
		"Read a text file inside the hook's working directory. Paths are relative to it. "+
			"Large files are read in pieces: pass offset (in bytes) to continue where the previous read stopped.",
		`{"type":"object","properties":{
			"path":{"type":"string","description":"file path, relative to the working directory"},
			"offset":{"type":"integer","minimum":0,"description":"byte offset to start at (default 0)"},
			"max_bytes":{"type":"integer","minimum":1,"maximum":30000,"description":"bytes to read (default and most 30000)"}
		},"required":["path"],"additionalProperties":false}`,
		readFile)
	register("list_files",
		"List files and directories inside the hook's working directory. Directories end with '/'. "+
			"With recursive, lists the whole tree below path (skipping .git). pattern filters names with a glob like *.md.",
		`{"type":"object","properties":{
			"path":{"type":"string","description":"directory, relative to the working directory (default .)"},
			"recursive":{"type":"boolean"},
			"pattern":{"type":"string","description":"glob matched against each file's name, e.g. *.go"},
			"max_entries":{"type":"integer","minimum":1,"maximum":2000,"description":"default 500"}
		},"additionalProperties":false}`,
		listFiles)
	register("write_file",
		"Create or replace a text file inside the hook's working directory (or append to it). "+
			"Files in the hooks directory and hookd's own state cannot be written.",
		`{"type":"object","properties":{
			"path":{"type":"string","description":"file path, relative to the working directory"},
			"content":{"type":"string"},
			"append":{"type":"boolean","description":"append instead of replacing"},
			"create_dirs":{"type":"boolean","description":"create missing parent directories"}
		},"required":["path","content"],"additionalProperties":false}`,
		writeFile)
}

type readArgs struct {
	Path     string `json:"path"`
	Offset   int64  `json:"offset"`
	MaxBytes int    `json:"max_bytes"`
}

func roots(env *engine.ToolEnv) (*steps.Roots, error) {
	if env == nil || env.Workdir == "" {
		return nil, errors.New("this run has no working directory")
	}
	return steps.NewRoots(env.Workdir, nil)
}

func readFile(_ context.Context, env *engine.ToolEnv, a *readArgs) (string, error) {
	r, err := roots(env)
	if err != nil {
		return "", err
	}
	f, _, err := r.Open(a.Path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return "", fmt.Errorf("%s is a directory; use list_files", a.Path)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", a.Path)
	}
	size := fi.Size()
	if a.Offset > size {
		return "", fmt.Errorf("offset %d is past the end of %s (%d bytes)", a.Offset, a.Path, size)
	}
	n := a.MaxBytes
	if n <= 0 || n > readMax {
		n = readDefault
	}
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, a.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read %s: %w", a.Path, err)
	}
	buf = buf[:got]
	if bytes.IndexByte(buf[:min(len(buf), binarySample)], 0) >= 0 {
		return "", fmt.Errorf("%s is a binary file (%d bytes)", a.Path, size)
	}
	// Stop on a character boundary; the next read starts there.
	end := a.Offset + int64(got)
	if end < size {
		cut := len(buf)
		for cut > 0 && len(buf)-cut < utf8.UTFMax && !utf8.RuneStart(buf[cut-1]) {
			cut--
		}
		if cut > 0 && !utf8.FullRune(buf[cut-1:]) {
			buf = buf[:cut-1]
			end = a.Offset + int64(len(buf))
		}
	}
	out := string(buf)
	if a.Offset > 0 || end < size {
		out += fmt.Sprintf("\n[hookd: bytes %d-%d of %d", a.Offset, end, size)
		if end < size {
			out += fmt.Sprintf("; call read_file with offset %d for more", end)
		}
		out += "]"
	}
	return out, nil
}

type listArgs struct {
	Path       string `json:"path"`
	Recursive  bool   `json:"recursive"`
	Pattern    string `json:"pattern"`
	MaxEntries int    `json:"max_entries"`
}

func listFiles(ctx context.Context, env *engine.ToolEnv, a *listArgs) (string, error) {
	r, err := roots(env)
	if err != nil {
		return "", err
	}
	if a.Path == "" {
		a.Path = "."
	}
	if a.Pattern != "" {
		if _, err := path.Match(a.Pattern, ""); err != nil {
			return "", fmt.Errorf("pattern %q: %w", a.Pattern, err)
		}
	}
	dir, err := r.Resolve(a.Path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(dir); err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory; use read_file", a.Path)
	}
	limit := a.MaxEntries
	if limit <= 0 || limit > listMax {
		limit = listDefault
	}
	var lines []string
	more := false
	errStop := errors.New("stop")
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p == dir {
			return err // an unreadable start directory is an error
		}
		if err != nil {
			return nil // skip what cannot be read below it
		}
		if d.IsDir() && d.Name() == ".git" && a.Recursive {
			return fs.SkipDir
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		match := true
		if a.Pattern != "" {
			match, _ = path.Match(a.Pattern, d.Name())
		}
		if match {
			if len(lines) == limit {
				more = true
				return errStop
			}
			lines = append(lines, describeEntry(rel, d))
		}
		if d.IsDir() && !a.Recursive {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return "", err
	}
	if len(lines) == 0 {
		return "(no entries)", nil
	}
	out := strings.Join(lines, "\n")
	if more {
		out += fmt.Sprintf("\n[hookd: stopped after %d entries; narrow path or pattern, or raise max_entries]", limit)
	}
	return out, nil
}

func describeEntry(rel string, d fs.DirEntry) string {
	switch {
	case d.IsDir():
		return rel + "/"
	case d.Type()&fs.ModeSymlink != 0:
		return rel + " (symlink)"
	case !d.Type().IsRegular():
		return rel + " (special)"
	}
	if fi, err := d.Info(); err == nil {
		return fmt.Sprintf("%s (%d bytes)", rel, fi.Size())
	}
	return rel
}

type writeArgs struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	Append     bool   `json:"append"`
	CreateDirs bool   `json:"create_dirs"`
}

func writeFile(_ context.Context, env *engine.ToolEnv, a *writeArgs) (string, error) {
	if len(a.Content) > writeMax {
		return "", fmt.Errorf("content is %d bytes; write_file writes at most %d", len(a.Content), writeMax)
	}
	r, err := roots(env)
	if err != nil {
		return "", err
	}
	real, err := r.ResolveNew(a.Path)
	if err != nil && a.CreateDirs && errors.Is(err, fs.ErrNotExist) {
		if err = mkdirs(r, filepath.Dir(a.Path), func(real string) error { return checkProtected(env, real) }); err == nil {
			real, err = r.ResolveNew(a.Path)
		}
	}
	if err != nil {
		return "", err
	}
	if err := checkProtected(env, real); err != nil {
		return "", err
	}
	parent, name := filepath.Dir(real), filepath.Base(real)
	root, err := os.OpenRoot(parent)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", a.Path, err)
	}
	defer root.Close()
	if fi, err := root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s exists and is not a regular file", a.Path)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if a.Append {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := root.OpenFile(name, flags, 0o644)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", a.Path, err)
	}
	if _, err := io.WriteString(f, a.Content); err != nil {
		f.Close()
		return "", fmt.Errorf("write %s: %w", a.Path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", a.Path, err)
	}
	verb := "wrote"
	if a.Append {
		verb = "appended"
	}
	return fmt.Sprintf("%s %d bytes to %s", verb, len(a.Content), r.Rel(real)), nil
}

// mkdirs creates dir (relative to the workdir or absolute) and its missing
// parents, after checking that the deepest existing one is inside the
// workdir and that check accepts the real path of dir.
func mkdirs(r *steps.Roots, dir string, check func(real string) error) error {
	var missing []string
	cur := dir
	for {
		real, err := r.Resolve(cur)
		if err == nil {
			target := real
			for i := len(missing) - 1; i >= 0; i-- {
				target = filepath.Join(target, missing[i])
			}
			if err := check(target); err != nil {
				return err
			}
			for i := len(missing) - 1; i >= 0; i-- {
				real = filepath.Join(real, missing[i])
				if err := os.Mkdir(real, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
					return err
				}
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return err
		}
		missing = append(missing, filepath.Base(cur))
		cur = parent
	}
}

// checkProtected refuses a real path inside the hooks directory or
// another protected path: no tool may create or edit hooks, hookd's
// settings or its database.
func checkProtected(env *engine.ToolEnv, real string) error {
	paths := env.Protected
	if env.HooksDir != "" {
		paths = append([]string{env.HooksDir}, paths...)
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		if rp, err := filepath.EvalSymlinks(abs); err == nil {
			abs = rp
		}
		if rel, err := filepath.Rel(abs, real); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			if p == env.HooksDir {
				return fmt.Errorf("refused: %s is inside the hooks directory; tools cannot create or edit hooks", real)
			}
			return fmt.Errorf("refused: %s is hookd's own (%s); tools cannot change it", real, p)
		}
	}
	return nil
}
