package config

import (
	"slices"
	"strings"
	"testing"
)

func TestNeedsNetwork(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		argv string
		want string
	}{
		{"curl -sS https://example.com", "curl"},
		{"/usr/bin/wget -q x", "wget"},
		{"sudo apt-get install -y jq", "apt-get"},
		{"git fetch origin", "git fetch"},
		{"git -C repo pull", "git pull"},
		{"git -c a=b clone u", "git clone"},
		{"git push", "git push"},
		{"go mod download", "go mod download"},
		{"go get example.com/x@v1", "go get"},
		{"npm install", "npm install"},
		{"npm ci", "npm ci"},
		{"pnpm install --frozen-lockfile", "pnpm install"},
		{"yarn install", "yarn install"},
		{"pip install -r requirements.txt", "pip install"},
		{"python3 -m pip install x", "pip install"},
		{"env FOO=1 curl x", "curl"},
		{"git log --grep fetch", ""},
		{"git commit -m push", ""},
		{"go test ./...", ""},
		{"go mod tidy", ""},
		{"npm test", ""},
		{"echo curl", ""},
		{"make", ""},
	} {
		if got := needsNetwork(strings.Fields(c.argv)); got != c.want {
			t.Errorf("needsNetwork(%s) = %q, want %q", c.argv, got, c.want)
		}
	}
}

// TestNetworkWarnings: a hook that takes untrusted input and runs a
// program that usually needs the network, in a step without network,
// gets a warning at the step's command; declaring network: (on the step
// or the hook, even false) or a trigger of the author's own does not.
func TestNetworkWarnings(t *testing.T) {
	t.Parallel()
	steps := "steps:\n  - type: test_cmd\n    command: |\n      set -e\n      curl -fsS https://example.com/x | jq .\n  - type: test_cmd\n    command: [git, -C, repo, fetch]\n  - type: test_cmd\n    command: go test ./...\n"
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"event", "trigger: {event: push.*}\n" + steps, []string{
			"hooks.d/event.yaml:4: steps[0].command: curl usually needs the network, which this step does not get",
			"hooks.d/event.yaml:8: steps[1].command: git fetch usually needs the network, which this step does not get",
		}},
		{"tools", "prompt: hi\ntools: [run_command]\n" + steps, []string{
			"hooks.d/tools.yaml:5: steps[0].command: curl usually needs the network",
			"hooks.d/tools.yaml:9: steps[1].command: git fetch usually needs the network",
		}},
		{"timer", "trigger: {every: 1h}\n" + steps, nil},
		{"hooknet", "trigger: {event: push.*}\nnetwork: false\n" + steps, nil},
		{"stepnet", "trigger: {event: push.*}\nsteps:\n  - type: test_cmd\n    command: curl x\n    network: [443]\n", nil},
	} {
		var got []string
		ParseHook(strings.NewReader(c.body), "hooks.d/"+c.name+".yaml", Options{Root: "/p", DefaultName: c.name,
			Warn: func(e *Error) { got = append(got, e.Error()) }})
		slices.Sort(got)
		if len(got) != len(c.want) {
			t.Errorf("%s: warnings\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) || !strings.Contains(got[i], "add network: true") {
				t.Errorf("%s: warning %q, want %q…", c.name, got[i], c.want[i])
			}
		}
	}
}
