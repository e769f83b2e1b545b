package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hookd/hookd/engine"
)

// Names that configure tools which run programs: git and the directories
// of git hooks managers, other version control, ssh, gpg, the XDG config
// and local bin directories, editor tasks. write_file refuses a path with
// any component of these names, in any case, whatever the hook's
// write_roots say.
var toolDirs = []string{".git", ".githooks", ".husky", ".hg", ".svn", ".bzr", ".ssh", ".gnupg",
	".config", ".local", ".vscode"}

// Shell start-up and credential files, refused like toolDirs; so is any
// name starting with ".env" (.env, .envrc, .env.local) or a dot-name
// ending in "rc" (.bashrc, .zshrc, .npmrc, .vimrc).
var toolFiles = []string{".profile", ".bash_profile", ".bash_login", ".bash_logout",
	".zshenv", ".zprofile", ".zlogin", ".zlogout", ".login", ".logout",
	".gitconfig", ".netrc", ".pam_environment", ".pre-commit-config.yaml"}

// Credential stores: read_file and list_files refuse a path with a
// component of these names, and any name starting with ".env", in any
// case. They are among the names write_file refuses too (protectedName
// makes sure of it).
var credentialDirs = []string{".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store"}

var credentialFiles = []string{".netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass", ".my.cnf"}

// credentialName reports whether a path component names a credential
// store.
func credentialName(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, ".env") || slices.Contains(credentialDirs, n) || slices.Contains(credentialFiles, n)
}

// Python runs these at start-up from any directory on its path, as it
// runs a line starting with "import" in any *.pth file there: refused
// like toolDirs, wherever they are.
var startupFiles = []string{"sitecustomize.py", "usercustomize.py"}

// toolConfigName reports whether a path component is one of the names
// above or a credential store.
func toolConfigName(name string) bool {
	n := strings.ToLower(name)
	if credentialName(n) || (strings.HasPrefix(n, ".") && strings.HasSuffix(n, "rc")) {
		return true
	}
	if strings.HasSuffix(n, ".pth") || slices.Contains(startupFiles, n) {
		return true
	}
	return slices.Contains(toolDirs, n) || slices.Contains(toolFiles, n)
}

// protectedPath is a path no tool may write: the hooks directory, the
// settings file (whether or not it exists), the token file, the state
// directory, the database files, and everything below them. All but the
// hooks directory are also paths no tool may read.
type protectedPath struct {
	what  string      // how errors name it
	hooks bool        // the hooks directory, or a hook file it links to
	real  string      // absolute, with the symbolic links of its existing part resolved
	info  fs.FileInfo // the file or directory, nil when it does not exist
}

// guard decides, for one tool call, what write_file may write (check,
// checkMkdir, checkSame) and what read_file and list_files may read
// (checkRead): it is the one place that says yes or no. Paths it judges
// for writing are clean, relative to the real workdir and free of
// symbolic links (write_file opens every component without following
// one), so comparing names is comparing places; paths it judges for
// reading are real (links resolved) and the file opened is compared too;
// the identity checks catch the same places reached another way.
//
// Reading is refused for a subset of what writing is: hookd's own files
// (token, settings, state directory, database) and credential stores.
// The hooks directory stays readable: hooks are written by their authors,
// hold no secrets (those come from the environment through secrets:),
// and a model reviewing or explaining hooks needs to see them.
type guard struct {
	workdir   string // real
	roots     []string
	protected []protectedPath
}

func newGuard(env *engine.ToolEnv, workdir string) *guard {
	g := &guard{workdir: workdir}
	if env.Hook != nil {
		g.roots = env.Hook.WriteRoots
	}
	add := func(what, p string, hooks bool) {
		if p == "" {
			return
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return
		}
		pp := protectedPath{what: what, hooks: hooks, real: realish(abs)}
		if fi, err := os.Stat(abs); err == nil {
			pp.info = fi
		}
		g.protected = append(g.protected, pp)
	}
	add("inside the hooks directory", env.HooksDir, true)
	for _, l := range linkedHooks(env.HooksDir) {
		add("linked from the hooks directory ("+l.link+")", l.target, true)
	}
	for _, p := range env.Protected {
		add("inside hookd's own "+p, p, false)
	}
	return g
}

func (p *protectedPath) refuse(rel string) error {
	if p.hooks {
		return fmt.Errorf("refused: %s is %s; tools cannot create or edit hooks", rel, p.what)
	}
	return fmt.Errorf("refused: %s is %s; tools cannot change it", rel, p.what)
}

// hookLink is a symbolic link in the hooks directory and one place it
// leads to.
type hookLink struct{ link, target string }

// linkedHooks lists what the symbolic links in the hooks directory lead
// to: hookd loads a hook file that is a link from its target, so the
// target (and every link on the way to it) is a hook file wherever it
// lies, also when it does not exist yet (a dangling link loads what is
// written there at the next reload). Every link counts, whatever its
// name: which names load is the loader's business, and a hooks
// directory holds little else.
func linkedHooks(dir string) []hookLink {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []hookLink
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		link := filepath.Join(dir, e.Name())
		p := link
		for range 40 { // as many links as the kernel follows
			t, err := os.Readlink(p)
			if err != nil {
				break
			}
			if !filepath.IsAbs(t) {
				t = filepath.Join(filepath.Dir(p), t)
			}
			out = append(out, hookLink{link, t})
			if fi, err := os.Lstat(t); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				break
			}
			p = t
		}
	}
	return out
}

// realish resolves the symbolic links of the longest existing part of
// abs and joins the rest as written.
func realish(abs string) string {
	var rest []string
	p := abs
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// check decides whether rel (clean, relative to the workdir) may be
// written.
func (g *guard) check(rel string) error {
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if toolConfigName(part) {
			return fmt.Errorf("refused: %s: %s configures tools that run programs; write_file never writes there", rel, part)
		}
	}
	target := filepath.Join(g.workdir, rel)
	for _, p := range g.protected {
		if within(p.real, target) {
			return p.refuse(rel)
		}
	}
	if err := g.inRoots(rel); err != nil {
		return err
	}
	return g.checkDotNames(rel)
}

// checkDotNames refuses a dot-named component of rel (.cargo, .mise.toml,
// .github, .gitattributes...: most configure some tool, and no fixed list
// knows them all) unless a write root that holds rel names it itself:
// write_roots: [.cache] lets write_file write .cache/x, not .cache/.y.
func (g *guard) checkDotNames(rel string) error {
	named := 0 // components of rel that the deepest root holding it names
	for _, r := range g.roots {
		r = filepath.Clean(r)
		if r != "." && within(r, rel) {
			named = max(named, len(strings.Split(filepath.ToSlash(r), "/")))
		}
	}
	for i, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if i >= named && strings.HasPrefix(part, ".") && part != "." {
			return fmt.Errorf("refused: %s: %s is a dot-named path, which often configures tools that run programs; write_file writes there only when a write root names it", rel, part)
		}
	}
	return nil
}

// inRoots checks that rel lies in one of the hook's write_roots.
func (g *guard) inRoots(rel string) error {
	if len(g.roots) == 0 {
		return errors.New("refused: this hook lists no write_roots, so write_file may write nowhere")
	}
	for _, r := range g.roots {
		if within(filepath.Clean(r), rel) {
			return nil
		}
	}
	return fmt.Errorf("refused: %s is outside this hook's write_roots (%s)", rel, strings.Join(g.roots, ", "))
}

// checkMkdir decides whether the missing directory rel may be made: it
// must lie in one of the write_roots or on the way to one.
func (g *guard) checkMkdir(rel string) error {
	for _, r := range g.roots {
		if within(rel, filepath.Clean(r)) {
			return nil
		}
	}
	return g.inRoots(rel)
}

// checkSame refuses a directory or file, opened or about to be
// replaced, that is a protected place reached by another name.
func (g *guard) checkSame(rel string, fi fs.FileInfo) error {
	if g == nil {
		return nil
	}
	for _, p := range g.protected {
		if p.info != nil && os.SameFile(p.info, fi) {
			return p.refuse(rel)
		}
	}
	return nil
}

// checkRead decides whether the real path target (symbolic links
// resolved, inside the workdir) may be read or listed; given is the path
// as the model wrote it, whose names are judged too. fi, when not nil, is
// the file opened, compared with hookd's own files so a hard link to one
// is refused as well.
func (g *guard) checkRead(given, target string, fi fs.FileInfo) error {
	names := strings.Split(filepath.ToSlash(filepath.Clean(given)), "/")
	if rel, err := filepath.Rel(g.workdir, target); err == nil && filepath.IsLocal(rel) {
		names = append(names, strings.Split(filepath.ToSlash(rel), "/")...)
	}
	for _, part := range names {
		if credentialName(part) {
			return fmt.Errorf("refused: %s: %s holds credentials; tools never read there", given, part)
		}
	}
	for _, p := range g.protected {
		// A protected directory that holds the workdir (db: hookd.db
		// puts the state directory next to hookd.yaml) protects only
		// the files listed on their own: the database and its siblings.
		if p.hooks || within(p.real, g.workdir) {
			continue
		}
		if within(p.real, target) || (fi != nil && p.info != nil && os.SameFile(p.info, fi)) {
			return fmt.Errorf("refused: %s is %s; tools cannot read it", given, p.what)
		}
	}
	return nil
}

// within reports whether p is root or lies under it; both are clean, and
// both absolute or both relative.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}
