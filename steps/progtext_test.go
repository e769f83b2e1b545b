package steps

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
)

// inputFiles writes in.txt, in.json and in.yaml in dir, for the text
// processors to read.
func inputFiles(t *testing.T, dir string) {
	t.Helper()
	for name, text := range map[string]string{"in.txt": "x\n", "in.json": "{}\n", "in.yaml": "a: 1\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestShellProgramTextAttacks performs attacks where data becomes the
// program of awk, sed, jq or yq: read from standard input (-f -, -f
// /dev/stdin, -f <(cat)) or given as jq's filter. awk's system() and
// sed's e command make MARK; a jq filter reads a secret from the
// environment and prints it shifted by one, which redaction of the
// secret's value does not catch.
func TestShellProgramTextAttacks(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "jq")
	testtool.Need(t, "yq")
	const shifted = "ivoufs3" // hunter2, each character plus one
	leak := "$ENV.HOOKD_TEST_SECRET|explode|map(.+1)|implode"
	awk := `BEGIN{system("touch MARK")}`
	runLiveAttacks(t, inputFiles, []liveAttack{
		{name: "awk -f -", tmpl: "printf '%s\\n' {{event.v}} | awk -f -", value: awk, want: "is piped into awk -f (its program is read from standard input)"},
		{name: "awk -f /dev/stdin", tmpl: "printf '%s\\n' {{event.v}} | awk -f /dev/stdin", value: awk, want: "is piped into awk -f"},
		{name: "awk -f <(cat)", tmpl: "printf '%s\\n' {{event.v}} | awk -f <(cat)", value: awk, want: "is piped into awk -f (its program is a <(...)", bashOnly: true},
		{name: "awk -f /dev/stdin <<EOF", tmpl: "awk -f /dev/stdin <<EOF\n{{event.v}}\nEOF", value: awk, want: "is fed to awk -f"},
		{name: "sed -f -", tmpl: "printf '%s\\n' {{event.v}} | sed -f - in.txt", value: "1e touch MARK", want: "is piped into sed -f"},
		{name: "sed -f /dev/stdin", tmpl: "printf '%s\\n' {{event.v}} | sed -f /dev/stdin in.txt", value: "1e touch MARK", want: "is piped into sed -f"},
		{name: "jq -f /dev/stdin", tmpl: "printf '%s\\n' {{event.v}} | jq -n -f /dev/stdin", value: leak, want: "is piped into jq -f (its filter is read from standard input)", leak: shifted},
		{name: "jq -n filter", tmpl: "jq -n {{event.v}}", value: leak, want: "is the filter jq runs, which is code", leak: shifted},
		{name: "jq filter of a file", tmpl: "jq -r {{event.v}} in.json", value: leak, want: "is the filter jq runs", leak: shifted},
		{name: "jq filter glued to text", tmpl: "jq -r \"{{event.v}} // empty\" in.json", value: leak, want: "is the filter jq runs", leak: shifted},
		{name: "yq filter", tmpl: "yq {{event.v}} in.yaml", value: leak, want: "is the filter yq runs", leak: shifted},
		{name: "yq -n filter", tmpl: "yq -n {{event.v}}", value: leak, want: "is the filter yq runs", leak: shifted},
	})
	// Data as a value jq reads with --arg, as its input, or as a file
	// still loads; so does a program from a file the author names.
	for _, tmpl := range []string{
		"jq -n --arg q {{event.v}} '$q'",
		"jq -r --arg q {{event.v}} '.[$q]' in.json",
		"printf '%s' {{event.v}} | jq -R .",
		"jq . -- {{event.f}}",
		"printf '%s' {{event.v}} | awk -f prog.awk",
		"printf '%s' {{event.v}} | sed -f edit.sed",
		"printf '%s' {{event.v}} | jq -f filter.jq",
		"yq -y --arg q {{event.v}} '.a = $q' in.yaml",
	} {
		if _, err := newShellStep(t, "command: "+yamlString(tmpl), 0); err != nil {
			t.Errorf("%q: %v; want it to load", tmpl, err)
		}
	}
}
