package main

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"
)

// TestHookTableMatchesTabwriter: list's table is laid out as tabwriter
// laid it out, with wide characters, empty cells, and, through tabwriter
// itself, cells holding tabs, line breaks or tabwriter's escape byte.
func TestHookTableMatchesTabwriter(t *testing.T) {
	cells := [][]string{
		{"", "x", "ünïcödé ☃", "-", "a", "", "last"},
		{"a much longer first cell", "", "", "", "", "", ""},
		{"b", "c", "d", "e", "f", "g", "last cell is not padded  "},
	}
	special := []string{"tab\there", "line\nbreak", "form\ffeed", "vtab\vx", "esc\xffaped\xff"}
	for _, extra := range append([]string{""}, special...) {
		tab := newTable(7, 4)
		var lines strings.Builder
		for _, row := range append(cells, []string{"z", extra, "", "", "", "", extra}) {
			tab.row(row...)
			lines.WriteString(strings.Join(row, "\t") + "\n")
		}
		var want, got, viaTabwriter bytes.Buffer
		tw := tabwriter.NewWriter(&want, 2, 4, 2, ' ', 0)
		tw.Write([]byte(lines.String()))
		tw.Flush()
		if err := tab.write(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("cell %q:\n got %q\nwant %q", extra, got.String(), want.String())
		}
		if tab.plain != (extra == "") {
			t.Errorf("cell %q: plain %v", extra, tab.plain)
		}
		if err := tab.tabwriter(&viaTabwriter); err != nil || viaTabwriter.String() != want.String() {
			t.Errorf("cell %q through tabwriter (%v):\n got %q\nwant %q", extra, err, viaTabwriter.String(), want.String())
		}
	}
}
