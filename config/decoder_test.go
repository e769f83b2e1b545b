package config

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/suggest"
	"gopkg.in/yaml.v3"
)

func newTestDecoder(t *testing.T, src string) *Decoder {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	return NewDecoder("k.yaml", "steps[0]", &n)
}

func TestDecoder(t *testing.T) {
	t.Parallel()
	type Inner struct {
		Level int `yaml:"level"`
	}
	type cfg struct {
		Inner   `yaml:",inline"`
		Command any               `yaml:"command"`
		Name    string            // untagged: "name"
		Skip    string            `yaml:"-"`
		Timeout time.Duration     `yaml:"timeout"`
		Retry   time.Duration     `yaml:"retry_seconds"`
		Ratio   float64           `yaml:"ratio"`
		Size    uint8             `yaml:"size"`
		Ptr     *string           `yaml:"ptr"`
		Env     map[string]string `yaml:"env"`
		Addr    netip.Addr        `yaml:"addr"` // a TextUnmarshaler
		Raw     yaml.Node         `yaml:"raw"`
		Lists   map[string][]int  `yaml:"lists"`
		Any     map[string]any    `yaml:"any"`
		private int
	}
	d := newTestDecoder(t, `
level: 3
command: [go, test]
name: x
timeout: 1m
retry_seconds: 5
ratio: 1
size: 255
ptr: p
env: {A: b}
addr: 10.0.0.1
raw: {any: thing}
lists: {a: [1, 2]}
any: {n: 1, f: 1.5, b: true, s: s, l: [x], m: {k: v}, "null": null, t: 2024-01-01}
`)
	var c cfg
	if err := d.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Level != 3 || c.Name != "x" || c.Timeout != time.Minute || c.Retry != 5*time.Second ||
		c.Ratio != 1 || c.Size != 255 || c.Ptr == nil || *c.Ptr != "p" || c.Env["A"] != "b" ||
		c.Addr.String() != "10.0.0.1" || c.Raw.Kind != yaml.MappingNode || len(c.Lists["a"]) != 2 {
		t.Errorf("decoded %+v", c)
	}
	if l, ok := c.Command.([]any); !ok || len(l) != 2 || l[0] != "go" {
		t.Errorf("command %#v", c.Command)
	}
	a := c.Any
	if a["n"] != 1 || a["f"] != 1.5 || a["b"] != true || a["s"] != "s" || a["null"] != nil || a["t"] != "2024-01-01" {
		t.Errorf("any %#v", a)
	}

	// A string command stays a string.
	var s struct {
		Command any `yaml:"command"`
	}
	if err := newTestDecoder(t, "command: ls -l\n").Decode(&s); err != nil || s.Command != "ls -l" {
		t.Errorf("string command: %#v %v", s.Command, err)
	}
}

func TestDecoderErrors(t *testing.T) {
	t.Parallel()
	type cfg struct {
		Size    uint8         `yaml:"size"`
		Timeout time.Duration `yaml:"timeout"`
		Retry   time.Duration `yaml:"retry_seconds"`
		Addr    netip.Addr    `yaml:"addr"`
		Ch      chan int      `yaml:"ch"`
		Keys    map[int]int   `yaml:"keys"`
		Ratio   float64       `yaml:"ratio"`
	}
	d := newTestDecoder(t, `size: 300
timeout: forever
retry_seconds: 5s
addr: nope
ch: 1
keys: {1: 2}
ratio: x
`)
	err := d.Decode(&cfg{})
	want := `k.yaml:1: steps[0].size: 300 is out of range
k.yaml:2: steps[0].timeout: bad duration "forever" (want a number with a unit: 500ms, 90s, 15m, 2h)
k.yaml:3: steps[0].retry_seconds: expected whole seconds, got string "5s"
k.yaml:4: steps[0].addr: ParseAddr("nope"): unable to parse IP
k.yaml:5: steps[0].ch: cannot decode into Go type chan int
k.yaml:6: steps[0].keys: cannot decode into Go type map[int]int
k.yaml:7: steps[0].ratio: expected a number, got string "x"`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	var l Errors
	if !errors.As(err, &l) || len(l) != 7 {
		t.Errorf("not an Errors list of 7: %#v", err)
	}

	if err := d.Decode(cfg{}); err == nil || !strings.Contains(err.Error(), "non-nil pointer") {
		t.Errorf("non-pointer: %v", err)
	}
	// Errorf locates a field, or falls back to the mapping.
	if e := d.Errorf("addr", "bad %s", "addr"); e.Error() != "k.yaml:4: steps[0].addr: bad addr" {
		t.Errorf("Errorf: %v", e)
	}
	if e := d.Errorf("missing", "x"); e.Error() != "k.yaml:1: steps[0].missing: x" {
		t.Errorf("Errorf missing: %v", e)
	}
	// An empty Decoder decodes nothing.
	if err := NewDecoder("k.yaml", "", nil).Decode(&cfg{}); err != nil {
		t.Errorf("nil node: %v", err)
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"comand", "command"},
		{"Prompt", "prompt"},
		{"promt", "prompt"},
		{"base", ""},
		{"x", ""},
		{"skip_llm_if_exitzero", "skip_llm_if_exit_zero"},
	} {
		got := suggest.Closest(c.in, []string{"command", "prompt", "name", "skip_llm_if_exit_zero", "skip_llm_if"})
		if got != c.want {
			t.Errorf("suggest.Closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
