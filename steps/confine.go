package steps

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Roots is the set of directories a step or tool may touch: the hook's
// workdir first, then the extra roots the hook allows. A path is inside
// when it lies under one of them both as written (".." cannot climb out)
// and once every symbolic link on the way is resolved (a link cannot
// point out). The file tools of the model stage use the same checks.
type Roots struct {
	given []string // absolute and clean, as configured; given[0] is the workdir
	real  []string // the same with symbolic links resolved
}

// NewRoots resolves workdir (empty means the current directory) and each
// extra root (relative to workdir, or absolute). Every root must exist and
// be a directory.
func NewRoots(workdir string, extra []string) (*Roots, error) {
	if workdir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("get working directory: %w", err)
		}
		workdir = wd
	}
	abs, err := filepath.Abs(workdir)
	if err != nil {
		return nil, fmt.Errorf("resolve hook workdir: %w", err)
	}
	r := &Roots{}
	if err := r.add(abs, "hook workdir"); err != nil {
		return nil, err
	}
	for _, e := range extra {
		p := e
		if !filepath.IsAbs(p) {
			p = filepath.Join(abs, p)
		}
		if err := r.add(filepath.Clean(p), fmt.Sprintf("root %q", e)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Roots) add(abs, what string) error {
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", what, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", what, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("resolve %s: %s is not a directory", what, real)
	}
	r.given = append(r.given, abs)
	r.real = append(r.real, real)
	return nil
}

// Workdir returns the real path of the hook's workdir.
func (r *Roots) Workdir() string { return r.real[0] }

// Confine resolves path against root (the hook's workdir) and the extra
// roots; see Roots.Resolve.
func Confine(root string, extra []string, path string) (string, error) {
	r, err := NewRoots(root, extra)
	if err != nil {
		return "", err
	}
	return r.Resolve(path)
}

// Resolve returns the real path (symbolic links resolved) of path, which
// is relative to the workdir or absolute. The path must exist, stay inside
// a root as written, and resolve to a place inside a root.
func (r *Roots) Resolve(path string) (string, error) {
	abs, err := r.lexical(path)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolve %q: %w", path, err)
	}
	if _, ok := r.holder(real); !ok {
		return "", r.outside(path, real)
	}
	return real, nil
}

// ResolveNew is Resolve for a file that may not exist yet, such as the
// target of a write: its parent directory must exist and be inside a
// root; the last element, if it exists and is a symbolic link, must
// resolve inside a root too.
func (r *Roots) ResolveNew(path string) (string, error) {
	abs, err := r.lexical(path)
	if err != nil {
		return "", err
	}
	if isRoot(r.given, abs) || isRoot(r.real, abs) {
		return r.Resolve(path)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("resolve %q: %w", path, err)
	}
	real := filepath.Join(parent, filepath.Base(abs))
	if fi, err := os.Lstat(real); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if real, err = filepath.EvalSymlinks(real); err != nil {
			return "", fmt.Errorf("resolve %q: %w", path, err)
		}
	}
	if _, ok := r.holder(real); !ok {
		return "", r.outside(path, real)
	}
	return real, nil
}

// Open opens path for reading after Resolve, through an os.Root on the
// root that holds it, so a file swapped for a symbolic link between the
// check and the open cannot lead outside. The open does not block on a
// FIFO; callers should check the file's type. It returns the file and its
// real path.
func (r *Roots) Open(path string) (*os.File, string, error) {
	real, err := r.Resolve(path)
	if err != nil {
		return nil, "", err
	}
	root, _ := r.holder(real)
	f, err := openBeneath(root, real)
	if err != nil {
		return nil, "", fmt.Errorf("open %q: %w", path, err)
	}
	return f, real, nil
}

// openBeneath opens the file at real, a path under root, for reading
// without following a symbolic link out of root on the way.
func openBeneath(root, real string) (*os.File, error) {
	rel, err := filepath.Rel(root, real)
	if err != nil {
		return nil, err
	}
	rt, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	return rt.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// Rel returns real (a path Resolve returned) relative to the workdir, or
// as it is when it lies in an extra root.
func (r *Roots) Rel(real string) string {
	if rel, err := filepath.Rel(r.real[0], real); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		return filepath.ToSlash(rel)
	}
	return real
}

// lexical makes path absolute and checks that, as written, it stays
// inside a root.
func (r *Roots) lexical(path string) (string, error) {
	if path == "" {
		return "", errors.New("empty path")
	}
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("%q: path contains a NUL byte", path)
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(r.given[0], abs)
	}
	abs = filepath.Clean(abs)
	if _, ok := r.holderOf(r.given, abs); ok {
		return abs, nil
	}
	if _, ok := r.holderOf(r.real, abs); ok {
		return abs, nil
	}
	if filepath.IsAbs(path) {
		return "", fmt.Errorf("%q is outside the hook's workdir%s", path, r.andRoots())
	}
	return "", fmt.Errorf("%q leaves the hook's workdir%s", path, r.andRoots())
}

func (r *Roots) outside(path, real string) error {
	return fmt.Errorf("%q resolves to %s, outside the hook's workdir %s%s", path, real, r.real[0], r.andRoots())
}

func (r *Roots) andRoots() string {
	if len(r.real) == 1 {
		return ""
	}
	return " and its allowed roots"
}

// holder returns the real root that holds the real path p, the longest
// when roots nest.
func (r *Roots) holder(p string) (string, bool) { return r.holderOf(r.real, p) }

func (r *Roots) holderOf(roots []string, p string) (string, bool) {
	best, found := "", false
	for _, root := range roots {
		if within(root, p) && len(root) >= len(best) {
			best, found = root, true
		}
	}
	return best, found
}

func isRoot(roots []string, p string) bool {
	for _, root := range roots {
		if root == p {
			return true
		}
	}
	return false
}

// within reports whether p is root or lies under it; both are clean
// absolute paths.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}
