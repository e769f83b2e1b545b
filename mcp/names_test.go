package mcp

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

func TestNameTools(t *testing.T) {
	long := strings.Repeat("x", 80)
	tools := []*Tool{{name: "b.c"}, {name: "b_c"}, {name: "a"}, {name: long}, {name: long + "y"}, {name: "ünï"}}
	nameTools("srv", tools)
	want := map[string]string{
		"a": "srv__a", "b.c": "srv__b_c", "b_c": "srv__b_c_2", "ünï": "srv___n_",
		long: "srv__" + long[:59], long + "y": "srv__" + long[:57] + "_2",
	}
	for _, tl := range tools {
		if tl.model != want[tl.name] || !engine.ToolNamePattern.MatchString(tl.model) {
			t.Errorf("%s -> %s, want %s", tl.name, tl.model, want[tl.name])
		}
	}
}
