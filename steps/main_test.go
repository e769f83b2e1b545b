package steps

import (
	"os"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
)

// TestMain fails the run when goroutines started by the tests outlive
// them: Command starts a watcher and os/exec starts output copiers, and
// both must end with the command. It removes the repository newRepo
// copies.
func TestMain(m *testing.M) {
	code := testtool.LeakCheckMain(m, "hookd/hookd/steps.", "hookd/hookd/process.", "os/exec.")
	if repoTemplate.root != "" {
		os.RemoveAll(repoTemplate.root)
	}
	os.Exit(code)
}
