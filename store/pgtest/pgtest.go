// Package pgtest runs a throwaway PostgreSQL server for tests: the real
// server binaries (Debian's postgresql package), a cluster made with
// initdb in a temporary directory (on /dev/shm, in memory, where it is a
// tmpfs with room), reached over a unix socket in that directory, and
// stopped when the test binary ends.
//
// A test package uses it as
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestX(t *testing.T) {
//		url := pgtest.NewDatabase(t) // an empty database of its own
//		...
//	}
//
// The server starts on the first NewDatabase call, once per test binary,
// so packages whose tests do not ask for one pay nothing. initdb runs
// once per machine (and server binaries): the cluster it made is kept
// beside the test clusters, as hookd-pgtest-initdb-KEY, and later test
// binaries copy it. Each
// NewDatabase is a new database in that server, dropped when the test
// ends.
//
// A package whose tests each want the same starting point (a store's
// schema, migrated) makes it once per test binary with a Template and
// copies it for each test (CREATE DATABASE ... TEMPLATE), instead of
// building it again in every database:
//
//	var migrated = pgtest.NewTemplate(func(ctx context.Context, url string) error {
//		... // run the migrations in the database at url
//	})
//
//	url := migrated.NewDatabase(t) // a database of its own, migrated
//
// When the binaries are missing the test is skipped with a message that
// names the package to install; with HOOKD_REQUIRE_POSTGRES=1 (set by CI)
// it fails instead, so that a CI machine without PostgreSQL cannot pass
// by skipping.
//
// PostgreSQL refuses to run as root. When the test runs as root (CI
// does), the server runs as the unprivileged user "nobody", and the
// cluster's directory belongs to it.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RequireEnv is the environment variable that turns a missing PostgreSQL
// from a skip into a failure.
const RequireEnv = "HOOKD_REQUIRE_POSTGRES"

// Package is the Debian package that provides the server binaries.
const Package = "postgresql"

// startTimeout bounds how long the server may take to start; generous,
// for a loaded CI machine.
const startTimeout = 2 * time.Minute

// Server is a running throwaway PostgreSQL server.
type Server struct {
	Dir  string // the cluster's directory: data in Dir/data, the socket in Dir
	Port int    // the port number, which names the socket file
	User string // the superuser role tests connect as

	// Version is the server's version number (server_version_num:
	// 150004 for 15.4).
	Version int

	cmd    *exec.Cmd
	exited chan struct{}
	waitEr error
	log    *os.File

	// admin holds the superuser's sessions in the postgres database,
	// for Exec: kept open, instead of a new session (a forked backend)
	// for each statement, two for each test database.
	admin *pgxpool.Pool
}

var (
	shared    *Server
	sharedErr error
	startOnce sync.Once
	dbSeq     atomic.Int64
	inMain    atomic.Bool // Main is running the tests
)

// Main runs the tests of m and then stops the server if one was started.
// It returns the exit code for os.Exit.
func Main(m *testing.M) int {
	inMain.Store(true)
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Shared returns the test binary's server, starting it on first use. It
// skips t when the binaries are missing (fails under
// HOOKD_REQUIRE_POSTGRES=1), and fails t when the server did not start
// or the test binary's TestMain is not Main's.
func Shared(t testing.TB) *Server {
	t.Helper()
	if !inMain.Load() {
		// Nothing would stop the server: it would die with the test
		// binary (on Linux) and leave its cluster's files behind.
		t.Fatal("pgtest: the test binary's TestMain must run pgtest.Main")
	}
	startOnce.Do(func() {
		var bin string
		bin, sharedErr = FindBinaries()
		if sharedErr != nil {
			return
		}
		shared, sharedErr = Start(bin)
	})
	if sharedErr != nil {
		unavailable(t, sharedErr)
	}
	return shared
}

// unavailable ends t for a server that could not be had: a skip when the
// binaries are missing (unless HOOKD_REQUIRE_POSTGRES=1), else a failure.
func unavailable(t testing.TB, err error) {
	t.Helper()
	var nf *NotFoundError
	if errors.As(err, &nf) {
		if required() {
			t.Fatalf("%v (%s=1)", err, RequireEnv)
			return
		}
		t.Skipf("%v; set %s=1 to make this a failure", err, RequireEnv)
		return
	}
	t.Fatalf("start PostgreSQL: %v", err)
}

// NewDatabase creates an empty database in the shared server and returns
// its connection URL. The database is dropped when t ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return Shared(t).newDatabase(t, "")
}

// newDatabase creates a database with the CREATE DATABASE options given,
// dropped when t ends, and returns its URL.
func (s *Server) newDatabase(t testing.TB, options string) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.Exec(ctx, "CREATE DATABASE "+name+options); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		// FORCE ends the sessions a test left open (PostgreSQL 13+).
		if err := s.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return s.URL(name)
}

// Template is a database made once per test binary, on the first
// NewDatabase, that each of its NewDatabase calls copies.
type Template struct {
	prepare func(ctx context.Context, url string) error

	once sync.Once
	name string
	err  error
}

// NewTemplate returns a Template that prepare fills: it gets the URL of
// a new empty database and must leave no session open in it (a database
// with sessions cannot be copied).
func NewTemplate(prepare func(ctx context.Context, url string) error) *Template {
	return &Template{prepare: prepare}
}

// NewDatabase creates a database in the shared server as a copy of the
// template, making the template first if this is its first use, and
// returns its connection URL. The database is dropped when t ends; the
// template stays until the server stops.
func (tp *Template) NewDatabase(t testing.TB) string {
	t.Helper()
	s := Shared(t)
	tp.once.Do(func() {
		tp.name = fmt.Sprintf("tpl%d_%d", os.Getpid(), dbSeq.Add(1))
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		if tp.err = s.Exec(ctx, "CREATE DATABASE "+tp.name); tp.err != nil {
			return
		}
		if err := tp.prepare(ctx, s.URL(tp.name)); err != nil {
			tp.err = fmt.Errorf("prepare template database: %w", err)
		}
	})
	if tp.err != nil {
		t.Fatalf("make template database: %v", tp.err)
	}
	// From PostgreSQL 15 a copy goes through the write-ahead log by
	// default (STRATEGY WAL_LOG), block by block: for a small database
	// such as a test's, copying its files costs the server half the CPU.
	// Before 15, copying the files was the only way.
	strategy := ""
	if s.Version >= 150000 {
		strategy = " STRATEGY FILE_COPY"
	}
	return s.newDatabase(t, " TEMPLATE "+tp.name+strategy)
}

func required() bool { return os.Getenv(RequireEnv) == "1" }

// URL returns the connection URL of database db on s, over its socket.
func (s *Server) URL(db string) string {
	q := url.Values{"host": {s.Dir}, "port": {strconv.Itoa(s.Port)}, "sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", User: url.User(s.User), Path: "/" + db, RawQuery: q.Encode()}).String()
}

// Exec runs one statement as the superuser in the postgres database.
func (s *Server) Exec(ctx context.Context, sql string) error {
	if _, err := s.admin.Exec(ctx, sql); err != nil {
		return fmt.Errorf("run %q: %w", sql, err)
	}
	return nil
}

// version asks the server its version number.
func (s *Server) version(ctx context.Context) (int, error) {
	var v string
	if err := s.admin.QueryRow(ctx, "SHOW server_version_num").Scan(&v); err != nil {
		return 0, fmt.Errorf("ask the test server its version: %w", err)
	}
	return strconv.Atoi(v)
}

// NotFoundError says the PostgreSQL server binaries were not found.
type NotFoundError struct {
	Looked []string // where they were looked for
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("PostgreSQL server binaries (initdb, postgres) not found on PATH or in %s: "+
		"install Debian's %s package (apt-get install %s)", strings.Join(e.Looked, ", "), Package, Package)
}

// FindBinaries returns the directory holding initdb and postgres: the
// first on PATH that has both, else the newest /usr/lib/postgresql/N/bin
// (Debian does not put the server binaries on PATH).
func FindBinaries() (string, error) { return findBinaries("/usr/lib/postgresql/*/bin") }

func findBinaries(glob string) (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if isExec(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(glob)
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, dir := range dirs {
		if isExec(filepath.Join(dir, "initdb")) && isExec(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", &NotFoundError{Looked: []string{glob}}
}

// version is N of /usr/lib/postgresql/N/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Start makes a new cluster in a new temporary directory (in memory
// where it can: clusterParent) with the binaries in bin and starts its server, listening only on a unix socket
// in that directory (no TCP port, so parallel test binaries cannot
// collide). It returns when the server accepts connections.
func Start(bin string) (_ *Server, err error) {
	cred, owner, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(clusterParent(), "hookd-pg-")
	if err != nil {
		return nil, fmt.Errorf("create cluster directory: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if owner != nil {
		if err := os.Chown(dir, owner[0], owner[1]); err != nil {
			return nil, fmt.Errorf("give cluster directory to the server user: %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, Port: port, User: "hookd", exited: make(chan struct{})}
	data := filepath.Join(dir, "data")

	if err := initCluster(bin, dir, data, s.User, cred); err != nil {
		return nil, err
	}
	// Every role is trusted but the members of passwordGroup
	// (NewUserDatabase). The superuser, never one of them, is named
	// first: a connection that matches by name skips the look-up of its
	// role's groups in the catalog that the group's rule costs.
	hba := filepath.Join(data, "pg_hba.conf")
	rules, err := os.ReadFile(hba)
	if err != nil {
		return nil, fmt.Errorf("read pg_hba.conf: %w", err)
	}
	first := "local all " + s.User + " trust\nlocal all +" + passwordGroup + " scram-sha-256\n"
	if err := os.WriteFile(hba, append([]byte(first), rules...), 0o600); err != nil {
		return nil, fmt.Errorf("write pg_hba.conf: %w", err)
	}

	s.log, err = os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, fmt.Errorf("create server log: %w", err)
	}
	if owner != nil {
		_ = s.log.Chown(owner[0], owner[1])
	}
	// A throwaway cluster: durability settings off, for speed.
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-k", dir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=16MB",
		"-c", "log_min_messages=warning")
	s.cmd.Dir = dir
	s.cmd.Env = serverEnv()
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = serverAttr(cred) // on Linux, dies with the test binary
	if err := s.startHeld(); err != nil {
		s.log.Close()
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if err := s.waitReady(); err != nil {
		s.Stop()
		return nil, err
	}
	if s.admin, err = pgxpool.New(context.Background(), s.URL("postgres")); err != nil {
		s.Stop()
		return nil, fmt.Errorf("connect to test server: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.Exec(ctx, "CREATE ROLE "+passwordGroup+" NOLOGIN"); err != nil {
		s.Stop()
		return nil, err
	}
	if s.Version, err = s.version(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// passwordGroup is the role whose members log in with their password
// (scram-sha-256); the server trusts every other role.
const passwordGroup = "hookd_password_users"

// NewUserDatabase creates an empty database owned by a new role that
// logs in only with password, and returns their names, for a test of how
// hookd handles a password. Both are dropped when t ends. Build the URL
// with the Server's Dir and Port (Shared).
func NewUserDatabase(t testing.TB, password string) (db, role string) {
	t.Helper()
	s := Shared(t)
	n := dbSeq.Add(1)
	db, role = fmt.Sprintf("t%d_%d", os.Getpid(), n), fmt.Sprintf("u%d_%d", os.Getpid(), n)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.Exec(ctx, "CREATE ROLE "+role+" LOGIN IN ROLE "+passwordGroup+" PASSWORD "+quote(password)); err != nil {
		t.Fatalf("create test role: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		if err := s.Exec(ctx, "DROP ROLE IF EXISTS "+role); err != nil {
			t.Errorf("drop test role: %v", err)
		}
	})
	if err := s.Exec(ctx, "CREATE DATABASE "+db+" OWNER "+role); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		if err := s.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return db, role
}

// quote is s as an SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// startHeld starts the server from a goroutine locked to its OS thread
// and keeps that goroutine, and so the thread, until the server exits.
// The parent-death signal follows the thread that forked, not the
// process: forked from an ordinary thread, the server would be stopped
// whenever the runtime ended that thread, which it does when any
// goroutine that locked it returns (the sandbox's spawner does so on
// purpose), in the middle of the test binary's run.
func (s *Server) startHeld() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the server
		err := s.cmd.Start()
		started <- err
		if err != nil {
			return
		}
		s.waitEr = s.cmd.Wait()
		close(s.exited)
	}()
	return <-started
}

// waitReady polls until the server accepts a connection, it exits, or
// startTimeout passes.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited while starting (%v): %s", s.waitEr, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections within %s: %w\n%s", startTimeout, err, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server (a fast shutdown, then SIGKILL if it hangs) and
// removes its directory. It is safe to call more than once.
func (s *Server) Stop() error {
	if s.admin != nil {
		s.admin.Close()
	}
	if s.cmd == nil || s.cmd.Process == nil {
		return os.RemoveAll(s.Dir)
	}
	// SIGINT is PostgreSQL's fast shutdown: sessions are ended.
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(startTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.log.Close()
	return os.RemoveAll(s.Dir)
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.log.Name())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// serverUser returns the credential the server runs with: nil when this
// process is not root, else that of "nobody", with its uid and gid for
// chown.
func serverUser() (*syscall.Credential, []int, error) {
	if os.Geteuid() != 0 {
		return nil, nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, nil, fmt.Errorf("PostgreSQL refuses to run as root, and no unprivileged user to run it: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, fmt.Errorf("read the ids of user nobody: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, []int{uid, gid}, nil
}

// serverEnv is the environment of initdb and postgres: only what they
// need, so that no PG* variable of the caller redirects them.
func serverEnv() []string {
	return []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"}
}

// freePort returns a TCP port number nothing listens on now. The server
// does not listen on it (only on the unix socket); it names the socket.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
