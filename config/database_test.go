package config

import (
	"strings"
	"testing"
)

func TestDaemonDatabase(t *testing.T) {
	t.Parallel()
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
		{"database: \"postgres://a b\\x7f\"\n", "hookd.yaml:1: database: the database URL does not parse: it holds a space or a control character"},
		{"database: postgres://hookd:s3/cret@db/hookd\n", "hookd.yaml:1: database: the database URL does not parse: a port is not a number; percent-encode"},
		{"database: postgresql://h1:5432,h2:5433/hookd\n", ""}, // several hosts, as libpq reads them
	} {
		_, err := LoadDaemon(strings.NewReader(tc.src), "hookd.yaml")
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.src, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "s3") {
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
