package config

import (
	"strings"
	"testing"
)

func TestDaemonDatabase(t *testing.T) {
	d, err := LoadDaemon(strings.NewReader("database: postgres://hookd@db.internal/hookd\n"), "/etc/hookd/hookd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Database != "postgres://hookd@db.internal/hookd" || d.DB != "/etc/hookd/.hookd/hookd.db" {
		t.Errorf("Database %q, DB %q", d.Database, d.DB)
	}
	for _, tc := range []struct{ src, want string }{
		{"database: /var/lib/hookd.db\n", "hookd.yaml:1: database: must be a postgres:// URL, like postgres://hookd@db.internal/hookd (a SQLite file is set with db:)"},
		{"database: mysql://x/y\n", "hookd.yaml:1: database: must be a postgres:// URL"},
		{"database: \"postgres://a b\\x7f\"\n", "hookd.yaml:1: database: not a valid URL"},
	} {
		_, err := LoadDaemon(strings.NewReader(tc.src), "hookd.yaml")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %s", tc.src, err, tc.want)
		}
	}

	// --db and HOOKD_DATABASE: a URL selects PostgreSQL, a path SQLite.
	d.SetDatabase("/tmp/x.db")
	if d.Database != "" || d.DB != "/tmp/x.db" {
		t.Errorf("SetDatabase(path): Database %q, DB %q", d.Database, d.DB)
	}
	d.SetDatabase("postgresql://h/db")
	if d.Database != "postgresql://h/db" || d.DB != "/tmp/x.db" {
		t.Errorf("SetDatabase(URL): Database %q, DB %q", d.Database, d.DB)
	}
}
