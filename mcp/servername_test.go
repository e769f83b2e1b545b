package mcp_test

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/mcp"
)

// TestServerNameNotAGlob: a server's name is the literal first segment of
// the SERVER.TOOL entries that list its tools, so a name that reads as a
// glob (engine.IsToolGlob) or holds a '.' is refused. A backslash slipped
// through before: tools: [a\b.echo] read as a glob matching "ab.echo",
// and found none of a\b's tools without a word.
func TestServerNameNotAGlob(t *testing.T) {
	for _, name := range []string{`a\b`, "a*", "a?", "a[b]", "a.b", ""} {
		_, err := mcp.NewManager([]mcp.ServerConfig{{Name: name, Command: []string{"true"}}}, mcp.Options{Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), "is not valid") {
			t.Errorf("server name %q: %v", name, err)
		}
	}
}
