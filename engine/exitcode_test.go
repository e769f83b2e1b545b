package engine

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestExitTableInDocs: docs/cli.md's "Run statuses and exit codes" has a
// row for each row of RunExits and ExitCodes, with the same code: the
// one table, in the code and in the docs.
func TestExitTableInDocs(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "### Run statuses and exit codes")
	if !ok {
		t.Fatal(`docs/cli.md has no "### Run statuses and exit codes"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, r := range RunExits {
		flag := ""
		if r.Flag != "" {
			flag = " `" + r.Flag + "`"
		}
		if row := fmt.Sprintf("| `%s` |%s | %d |", r.Status, flag, r.Code); !strings.Contains(section, row) {
			t.Errorf("docs/cli.md lacks the row %q", row)
		}
	}
	for _, c := range ExitCodes {
		if row := fmt.Sprintf("\n| %d | ", c.Code); !strings.Contains(section, row) {
			t.Errorf("docs/cli.md lacks exit code %d", c.Code)
		}
	}
}
