package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/glob"
	"github.com/hookd/hookd/steps"
)

// Limits of the file tools.
const (
	readDefault  = 30_000  // bytes read_file returns unless asked for fewer
	readMax      = 30_000  // bytes read_file returns at most per call
	listDefault  = 500     // entries list_files returns unless asked
	listMax      = 2000    // entries list_files returns at most
	writeMax     = 1 << 20 // bytes write_file writes at most
	appendMax    = 8 << 20 // bytes of an existing file write_file appends to at most
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
		"Create or replace a text file inside the hook's working directory (or append to it), "+
			"in the directories the hook allows (its write_roots). Paths through symbolic links, files with "+
			"more than one hard link, hookd's own files and tool configuration (.git/, .ssh/, .bashrc, .env...) are refused.",
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

// readFile opens the file as write_file does (openDirs, openChecked):
// through one os.Root at the real workdir, one component at a time,
// following no symbolic link, so a directory swapped for a link while it
// reads cannot lead to a file the checks did not see. It refuses a file
// with more than one hard link, as write_file does.
func readFile(_ context.Context, env *engine.ToolEnv, a *readArgs) (string, error) {
	r, err := roots(env)
	if err != nil {
		return "", err
	}
	rel, err := workdirPath(env.Workdir, r.Workdir(), a.Path)
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(r.Workdir())
	if err != nil {
		return "", fmt.Errorf("open workdir: %w", err)
	}
	defer root.Close()
	// Directories are not checked against the guard on the way (the
	// hooks directory is readable); the file is, by its path and by what
	// was opened.
	dir, err := openDirs(root, nil, rel, false, "read_file")
	if err != nil {
		return "", err
	}
	defer dir.Close()
	name := filepath.Base(rel)
	checked, err := dir.Lstat(name)
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", a.Path, err)
	}
	if checked.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("refused: %s is a symbolic link; read_file does not follow links", a.Path)
	}
	if err := newGuard(env, r.Workdir()).checkRead(a.Path, filepath.Join(r.Workdir(), rel), checked); err != nil {
		return "", err
	}
	if checked.IsDir() {
		return "", fmt.Errorf("%s is a directory; use list_files", a.Path)
	}
	if !checked.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", a.Path)
	}
	f, fi, err := openChecked(dir, name, a.Path, checked)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if links(fi) > 1 {
		return "", fmt.Errorf("refused: %s has %d hard links; read_file reads only files with one", a.Path, links(fi))
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
	var pattern *glob.Pattern
	if a.Pattern != "" {
		if pattern, err = glob.Compile(a.Pattern, glob.Slash); err != nil {
			return "", err
		}
	}
	dir, err := r.Resolve(a.Path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory; use read_file", a.Path)
	}
	g := newGuard(env, r.Workdir())
	if err := g.checkRead(a.Path, dir, fi); err != nil {
		return "", err
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
		match := pattern == nil || pattern.Match(d.Name())
		// A protected entry is named, never described or entered.
		refused := g.checkRead(path.Join(filepath.ToSlash(a.Path), rel), p, nil) != nil
		if match {
			if len(lines) == limit {
				more = true
				return errStop
			}
			if refused {
				name := rel
				if d.IsDir() {
					name += "/"
				}
				lines = append(lines, name+" (protected: tools cannot read it)")
			} else {
				lines = append(lines, describeEntry(rel, d))
			}
		}
		if d.IsDir() && (!a.Recursive || refused) {
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

// writeFile writes through one os.Root at the real workdir, opening one
// component at a time and following no symbolic link, so nothing swapped
// in during the call leads elsewhere; it refuses a file with more than one
// link, and replaces the file by renaming a temporary file made in the
// same directory, so nothing is ever written into an existing file.
func writeFile(_ context.Context, env *engine.ToolEnv, a *writeArgs) (string, error) {
	if len(a.Content) > writeMax {
		return "", fmt.Errorf("content is %d bytes; write_file writes at most %d", len(a.Content), writeMax)
	}
	r, err := roots(env)
	if err != nil {
		return "", err
	}
	rel, err := workdirPath(env.Workdir, r.Workdir(), a.Path)
	if err != nil {
		return "", err
	}
	g := newGuard(env, r.Workdir())
	if err := g.check(rel); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(r.Workdir())
	if err != nil {
		return "", fmt.Errorf("open workdir: %w", err)
	}
	defer root.Close()
	dir, err := openDirs(root, g, rel, a.CreateDirs, "write_file")
	if err != nil {
		return "", err
	}
	defer dir.Close()
	name := filepath.Base(rel)
	var (
		prefix []byte
		keep   fs.FileMode // the permissions of the file replaced
	)
	fi, err := dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("stat %s: %w", rel, err)
	default:
		if err := checkTarget(g, rel, fi); err != nil {
			return "", err
		}
		keep = fi.Mode().Perm()
		if a.Append {
			if prefix, err = readExisting(dir, name, rel, fi); err != nil {
				return "", err
			}
		}
	}
	if err := replaceFile(dir, name, keep, prefix, a.Content); err != nil {
		return "", fmt.Errorf("write %s: %w", rel, err)
	}
	verb := "wrote"
	if a.Append {
		verb = "appended"
	}
	return fmt.Sprintf("%s %d bytes to %s", verb, len(a.Content), filepath.ToSlash(rel)), nil
}

// workdirPath makes p, as the model gave it, a clean path relative to
// the workdir: relative, or absolute inside the workdir as configured or
// as resolved, and never the workdir itself or above it.
func workdirPath(given, real, p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%q: path contains a NUL byte", p)
	}
	rel := filepath.Clean(p)
	if filepath.IsAbs(rel) {
		found := false
		for _, base := range []string{given, real} {
			if r, err := filepath.Rel(base, rel); err == nil && filepath.IsLocal(r) {
				rel, found = r, true
				break
			}
		}
		if !found {
			return "", fmt.Errorf("%q is outside the hook's workdir", p)
		}
	}
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%q leaves the hook's workdir", p)
	}
	return rel, nil
}

// openDirs opens the directory that holds rel, one component at a time
// below root. A component that is a symbolic link, or that changed
// between its check and its opening, is refused; so is one that is a
// protected directory under another name (unless g is nil). With create,
// missing directories in the hook's write_roots, or on the way to one,
// are made. tool names the caller in errors.
func openDirs(root *os.Root, g *guard, rel string, create bool, tool string) (*os.Root, error) {
	cur, err := root.OpenRoot(".")
	if err != nil {
		return nil, err
	}
	if fi, err := cur.Stat("."); err != nil {
		cur.Close()
		return nil, err
	} else if err := g.checkSame(".", fi); err != nil {
		cur.Close()
		return nil, err
	}
	parent := filepath.Dir(rel)
	if parent == "." {
		return cur, nil
	}
	sofar := ""
	for _, part := range strings.Split(parent, string(filepath.Separator)) {
		sofar = filepath.Join(sofar, part)
		next, err := openDir(cur, g, part, sofar, create, tool)
		cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

func openDir(cur *os.Root, g *guard, part, rel string, create bool, tool string) (*os.Root, error) {
	fi, err := cur.Lstat(part)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			if tool == "write_file" {
				return nil, fmt.Errorf("directory %s does not exist (pass create_dirs)", rel)
			}
			return nil, fmt.Errorf("directory %s does not exist", rel)
		}
		if err := g.checkMkdir(rel); err != nil {
			return nil, fmt.Errorf("create %s: %w", rel, err)
		}
		if err := cur.Mkdir(part, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create %s: %w", rel, err)
		}
		fi, err = cur.Lstat(part)
	}
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", rel, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("refused: %s is a symbolic link; %s does not follow links", rel, tool)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", rel)
	}
	next, err := cur.OpenRoot(part)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", rel, err)
	}
	opened, err := next.Stat(".")
	if err == nil && !os.SameFile(fi, opened) {
		err = fmt.Errorf("refused: %s changed while it was opened", rel)
	}
	if err == nil {
		err = g.checkSame(rel, opened)
	}
	if err != nil {
		next.Close()
		return nil, err
	}
	return next, nil
}

// checkTarget refuses to replace anything but a regular file with one
// link that is not a protected file under another name.
func checkTarget(g *guard, rel string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("refused: %s is a symbolic link; write_file does not follow links", rel)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s exists and is not a regular file", rel)
	case links(fi) > 1:
		return fmt.Errorf("refused: %s has %d hard links; write_file writes only files with one", rel, links(fi))
	}
	return g.checkSame(rel, fi)
}

// links returns the number of hard links of a file.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// readExisting reads the file an append extends: the one checked, with
// one link, and not larger than appendMax.
func readExisting(dir *os.Root, name, rel string, checked fs.FileInfo) ([]byte, error) {
	if checked.Size() > appendMax {
		return nil, fmt.Errorf("%s is %d bytes; write_file appends only to files up to %d", rel, checked.Size(), appendMax)
	}
	f, fi, err := openChecked(dir, name, rel, checked)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if links(fi) > 1 {
		return nil, fmt.Errorf("refused: %s changed while it was opened", rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, appendMax+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if len(b) > appendMax {
		return nil, fmt.Errorf("%s grew past %d bytes; write_file appends only to files up to that", rel, appendMax)
	}
	return b, nil
}

// openChecked opens name in dir for reading, without blocking on a FIFO,
// and refuses what it opened unless it is the file checked (the Lstat of
// name): a link or another file swapped in between is not read. The open
// cannot leave dir, an os.Root.
func openChecked(dir *os.Root, name, rel string, checked fs.FileInfo) (*os.File, fs.FileInfo, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", rel, err)
	}
	fi, err := f.Stat()
	if err == nil && !os.SameFile(fi, checked) {
		err = fmt.Errorf("refused: %s changed while it was opened", rel)
	} else if err != nil {
		err = fmt.Errorf("stat %s: %w", rel, err)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// replaceFile writes prefix and content to a new temporary file in dir
// and renames it to name, replacing what was there. A new file gets
// 0644 less the umask; a replaced one keeps its permissions (keep).
func replaceFile(dir *os.Root, name string, keep fs.FileMode, prefix []byte, content string) error {
	var (
		tmp string
		f   *os.File
		err error
	)
	for range 10 {
		var rnd [8]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return err
		}
		tmp = ".hookd-write-" + hex.EncodeToString(rnd[:]) + ".tmp"
		f, err = dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	err = func() error {
		defer f.Close()
		if _, err := f.Write(prefix); err != nil {
			return err
		}
		if _, err := io.WriteString(f, content); err != nil {
			return err
		}
		if keep != 0 {
			if err := f.Chmod(keep); err != nil {
				return err
			}
		}
		if err := f.Sync(); err != nil {
			return err
		}
		return f.Close()
	}()
	if err == nil {
		err = dir.Rename(tmp, name)
	}
	if err != nil {
		dir.Remove(tmp)
	}
	return err
}
