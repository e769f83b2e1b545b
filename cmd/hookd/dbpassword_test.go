package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hookd/hookd/store/pgtest"
)

// dbSecret is the core of the test's PostgreSQL password; no output may
// hold it, whole or in part.
const dbSecret = "Zx9Qv"

// TestDatabasePasswordNotShown runs daemons on a real PostgreSQL whose
// role logs in only with a password holding @ / : % # ? and a space,
// given percent-encoded in the URL's userinfo and as ?password=: each
// daemon connects (a run is recorded), and neither its log, `hookd
// status` nor GET /v1/status shows the password. URLs that do not parse
// (the password's characters not encoded) are refused by `hookd serve`
// and in hookd.yaml with the reason, and without the URL.
func TestDatabasePasswordNotShown(t *testing.T) {
	password := dbSecret + "@/:%#? " + dbSecret
	encoded := dbSecret + "%40%2F%3A%25%23%3F%20" + dbSecret
	s := pgtest.Shared(t)
	where := "host=" + url.QueryEscape(s.Dir) + "&port=" + strconv.Itoa(s.Port) + "&sslmode=disable"
	db1, role1 := pgtest.NewUserDatabase(t, password)
	db2, role2 := pgtest.NewUserDatabase(t, password)
	db3, role3 := pgtest.NewUserDatabase(t, password)
	db4, role4 := pgtest.NewUserDatabase(t, password)
	passfile := filepath.Join(t.TempDir(), "pgpass")
	// A passfile escapes : and \ with a \.
	if err := os.WriteFile(passfile, []byte("*:*:*:"+role4+":"+strings.ReplaceAll(password, ":", "\\:")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	shows := func(what, out string) {
		t.Helper()
		if strings.Contains(out, dbSecret) {
			t.Errorf("%s shows the password:\n%s", what, out)
		}
	}
	for _, c := range []struct {
		name, url, role string
		environ         []string
	}{
		{"userinfo", "postgres://" + role1 + ":" + encoded + "@/" + db1 + "?" + where, role1, nil},
		{"password parameter", "postgres://" + role2 + "@/" + db2 + "?" + where + "&password=" + encoded, role2, nil},
		{"PGPASSWORD", "postgres://" + role3 + "@/" + db3 + "?" + where, role3, []string{"PGPASSWORD=" + password}},
		{"passfile", "postgres://" + role4 + "@/" + db4 + "?" + where, role4, []string{"PGPASSFILE=" + passfile}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, "database: "+c.url+"\n", map[string]string{"quick.yaml": quickHook})
			e.environ = c.environ
			d := e.serve()
			e.must(0, "fire", "quick", "--wait")
			if !strings.Contains(d.log.String(), `db="postgres://`+c.role) {
				t.Errorf("the start log does not name the database, password masked:\n%s", d.log)
			}
			shows("the daemon's log", d.log.String())
			st := e.must(0, "status")
			shows("hookd status", st.stdout+st.stderr)
			if !strings.Contains(st.stdout, c.role) {
				t.Errorf("hookd status does not name the database:\n%s", st)
			}
			code, body := e.socketClient().call("GET", "/v1/status", nil)
			if code != 200 || !strings.Contains(string(body), c.role) {
				t.Errorf("GET /v1/status: %d %s", code, body)
			}
			shows("GET /v1/status", string(body))
		})
	}

	for _, c := range []struct{ name, url, reason string }{
		{"slash", "postgres://" + role1 + ":" + dbSecret + "/" + dbSecret + "@/" + db1 + "?" + where, "a port is not a number"},
		{"at", "postgres://" + role1 + ":" + dbSecret + "@" + dbSecret + "@/" + db1 + "?" + where, "the host holds an @"},
		{"percent", "postgres://" + role1 + ":" + dbSecret + "%" + dbSecret + "@/" + db1 + "?" + where, "the password has a % not followed by two hex digits"},
		{"space", "postgres://" + role1 + ":" + dbSecret + " " + dbSecret + "@/" + db1 + "?" + where, "it holds a space"},
		{"parameter", "postgres://" + role1 + "@/" + db1 + "?" + where + "&password=" + dbSecret + "&" + dbSecret, "a query parameter has no ="},
	} {
		t.Run("malformed "+c.name, func(t *testing.T) {
			e := newEnv(t, "", nil)
			r := e.must(1, "serve", "--db", c.url)
			if !strings.Contains(r.stderr, "the database URL does not parse: "+c.reason) {
				t.Errorf("hookd serve --db: want the reason %q:\n%s", c.reason, r)
			}
			shows("hookd serve --db", r.stdout+r.stderr)
			e.write("hookd.yaml", "database: '"+c.url+"'\n")
			r = e.must(1, "serve")
			if !strings.Contains(r.stderr, "hookd.yaml:1: database: the database URL does not parse: "+c.reason) {
				t.Errorf("database: in hookd.yaml: want the reason %q:\n%s", c.reason, r)
			}
			shows("hookd serve", r.stdout+r.stderr)
		})
	}
}
