package main

import (
	"os"
	"strings"
	"testing"
)

// TestDBQueryRefusesOwnDatabase: a db_query step with sql: cannot open
// hookd's own database, whether it names the file, a hard link to it
// made in the workdir, or a symlink: the file is compared by identity.
func TestDBQueryRefusesOwnDatabase(t *testing.T) {
	hook := func(db string) string {
		return "steps:\n  - type: db_query\n    sql: select count(*) as n from runs\n    db: " + db + "\n    required: true\nskip_llm: true\n"
	}
	e := newEnv(t, "", map[string]string{
		"direct.yaml":   hook(".hookd/hookd.db"),
		"dotted.yaml":   hook("./.hookd/../.hookd/hookd.db"),
		"hardlink.yaml": hook("copy.db"),
		"symlink.yaml":  hook("link.db"),
	})
	e.serve()
	if !e.exists(".hookd/hookd.db") {
		t.Fatal("no database at .hookd/hookd.db")
	}
	if err := os.Link(e.path(".hookd/hookd.db"), e.path("copy.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".hookd/hookd.db", e.path("link.db")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"direct", "dotted", "hardlink", "symlink"} {
		r := e.run("fire", name, "--wait")
		run := e.getRun(runID(t, r))
		if run.Status != "failed" || !strings.Contains(run.Error, "hookd's own database") {
			t.Errorf("%s: %s %q", name, run.Status, run.Error)
		}
		for _, s := range run.Steps {
			if s.Output != "" || (s.Count != nil && *s.Count != 0) {
				t.Errorf("%s: the step read hookd's database: %q %v", name, s.Output, s.Fields)
			}
		}
	}
}
