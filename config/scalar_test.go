package config

import (
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestScalarsAsYAML checks that booleans and integers read without
// yaml.v3's decoder (for the nodes tagged !!bool and !!int, as the loader
// calls them) come out as yaml.v3 decodes them, in every spelling YAML
// resolves (and some it does not), plain, quoted and tagged.
func TestScalarsAsYAML(t *testing.T) {
	t.Parallel()
	values := []string{
		"true", "True", "TRUE", "false", "False", "FALSE", "yes", "on", "tRue", "1", "0",
		"-0", "+0", "00", "007", "010", "-0777", "42", "-42", "+42", "1_000", "0x1F", "0o17", "-0o17", "0b101", "-0b101",
		"999999999999999999", "-999999999999999999", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "18446744073709551615", "18446744073709551616", "1e3", "1.5", ".5",
		"12abc", "-", "", "2001-12-14", "~", "null",
	}
	forms := []string{"v: %s", "v: '%s'", "v: !!int %s", "v: !!bool %s", "v: !!float %s"}
	for _, v := range values {
		for _, form := range forms {
			src := form[:3] + v
			switch form {
			case "v: '%s'":
				src = "v: '" + v + "'"
			case "v: !!int %s":
				src = "v: !!int " + v
			case "v: !!bool %s":
				src = "v: !!bool " + v
			case "v: !!float %s":
				src = "v: !!float " + v
			}
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(src), &doc); err != nil || len(doc.Content) == 0 {
				continue
			}
			n := doc.Content[0].Content[1]

			if n.ShortTag() == "!!bool" { // as boolean() calls it
				var wantB, gotB bool
				wantOK := n.Decode(&wantB) == nil
				if gotOK := scalarBool(n, &gotB); gotOK != wantOK || gotB != wantB {
					t.Errorf("%q as bool: got %v, %v; yaml.v3: %v, %v", src, gotB, gotOK, wantB, wantOK)
				}
			}
			if n.ShortTag() == "!!int" { // as integer() calls it
				var wantI, gotI int64
				wantOK := n.Decode(&wantI) == nil
				if gotOK := scalarInt(n, &gotI); gotOK != wantOK || gotI != wantI {
					t.Errorf("%q as int64: got %v, %v; yaml.v3: %v, %v", src, gotI, gotOK, wantI, wantOK)
				}
			}
			var want any
			switch n.ShortTag() {
			case "!!bool", "!!int", "!!float":
				if err := n.Decode(&want); err != nil {
					want = n.Value
				}
			default:
				want = n.Value
			}
			s := newState("t.yaml")
			if got := s.anyNode(n, "v"); !reflect.DeepEqual(got, want) || reflect.TypeOf(got) != reflect.TypeOf(want) {
				t.Errorf("%q as any: got %#v; yaml.v3: %#v", src, got, want)
			}
		}
	}
}
