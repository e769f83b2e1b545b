package pgurl

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The password of these URLs is S3cr3t with one of @ / : % # ? or a
// space, percent-encoded.
var described = []struct{ url, want string }{
	{"postgres://hookd:S3cr3t%40x@db.internal:5432/hookd", "postgres://hookd:xxxxx@db.internal:5432/hookd"},
	{"postgres://hookd:S3cr3t%2Fx%3Ay%25z%23w%3Fv%20u@db/hookd?sslmode=disable", "postgres://hookd:xxxxx@db/hookd?sslmode=disable"},
	{"postgresql://hookd@db/hookd?password=S3cr3t%40x&sslmode=require", "postgresql://hookd@db/hookd?password=xxxxx&sslmode=require"},
	{"postgres://hookd@db/hookd?pass%77ord=S3cr3t", "postgres://hookd@db/hookd?pass%77ord=xxxxx"},
	{"postgres://hookd@db/hookd?sslpassword=S3cr3t&application_name=x", "postgres://hookd@db/hookd?sslpassword=xxxxx&application_name=x"},
	{"postgres://hookd:S3cr3t#x?y@db/hookd", "postgres://hookd:xxxxx@db/hookd"},      // libpq: a # or ? before the @ is the password's
	{"postgres://hookd:@db/hookd?password=", "postgres://hookd:@db/hookd?password="}, // no password: nothing to mask
	{"postgres://hookd@db/hookd", "postgres://hookd@db/hookd"},
	{"postgresql://h1:5432,h2:5433/hookd?target_session_attrs=read-write", "postgresql://h1:5432,h2:5433/hookd?target_session_attrs=read-write"},
	{"postgres://u@[::1]:5432/hookd?host=%2Ftmp%2Fpg", "postgres://u@[::1]:5432/hookd?host=%2Ftmp%2Fpg"},
	{"postgres://db", "postgres://db"},
	{"postgres:///hookd?host=/run/postgresql&password=S3cr3t", "postgres:///hookd?host=/run/postgresql&password=xxxxx"},
}

func TestDescribe(t *testing.T) {
	for _, c := range described {
		if got := Describe(c.url); got != c.want {
			t.Errorf("Describe(%s) = %s, want %s", c.url, got, c.want)
		}
	}
}

// The password of these is ZQ (or part of it, where the URL is broken by
// a character that was not encoded); no reason may show any of it.
func TestCheckRefuses(t *testing.T) {
	for _, c := range []struct{ url, reason string }{
		{"postgres://hookd:ZQ@ZQ@db/hookd", "the host holds an @"},
		{"postgres://hookd:ZQ/ZQ@db/hookd", "a port is not a number"},
		{"postgres://hookd:1/ZQ@db/hookd", "the database name holds an @"},
		{"postgres://hookd:ZQ%ZQ@db/hookd", "the password has a % not followed by two hex digits"},
		{"postgres://hookd:ZQ%00@db/hookd", "the password has %00"},
		{"postgres://hookd:ZQ ZQ@db/hookd", "it holds a space or a control character"},
		{"postgres://hookd@db/hookd?password=ZQ=ZQ", "a query parameter has two ="},
		{"postgres://hookd@db/hookd?password=ZQ&ZQ", "a query parameter has no ="},
		{"postgres://hookd@db/hookd?password=ZQ%ZQ", "the password parameter has a % not followed"},
		{"postgres://hookd@[::1/hookd", "an IPv6 host has no closing ]"},
		{"mysql://hookd:ZQ@db/hookd", "it does not begin with postgres://"},
	} {
		err := Check(c.url)
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("Check(%s) = %v, want an *Error", c.url, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "the database URL does not parse: "+c.reason) {
			t.Errorf("Check(%s) = %v, want the reason %q", c.url, err, c.reason)
		}
		if strings.Contains(err.Error(), "ZQ") || strings.Contains(err.Error(), "hookd") {
			t.Errorf("Check(%s) quotes the URL: %v", c.url, err)
		}
		if d := Describe(c.url); d != "a database URL that does not parse" {
			t.Errorf("Describe(%s) = %s", c.url, d)
		}
	}
}

// FuzzDescribe: whenever Check accepts a URL pgx parses, pgx reads the
// described URL as the same user, hosts and database, with the mask for
// the password (and no password where there was none): the mask stands
// exactly where pgx takes the password from.
func FuzzDescribe(f *testing.F) {
	f.Setenv("PGPASSWORD", "")
	f.Setenv("PGPASSFILE", "/nonexistent")
	f.Setenv("PGSERVICEFILE", "/nonexistent")
	for _, c := range described {
		f.Add(c.url)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Check(s) != nil {
			return
		}
		orig, err := pgx.ParseConfig(s)
		if err != nil {
			return
		}
		d := Describe(s)
		got, err := pgx.ParseConfig(d)
		if err != nil {
			t.Fatalf("pgx parses %q but not its description %q: %v", s, d, err)
		}
		want := ""
		if orig.Password != "" {
			want = mask
		}
		if got.Password != want || got.User != orig.User || got.Host != orig.Host || got.Port != orig.Port || got.Database != orig.Database {
			t.Fatalf("%q described as %q reads as user %q password %q host %q port %d database %q, want %q %q %q %d %q",
				s, d, got.User, got.Password, got.Host, got.Port, got.Database, orig.User, want, orig.Host, orig.Port, orig.Database)
		}
	})
}
