package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// table lays out rows of cells in columns as the commands' tabwriters do
// (tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)), for tables long enough that
// tabwriter's cell-by-cell work shows (`hookd list` of 10,000 hooks):
// the cells are appended to one buffer, and the columns padded in one
// pass at the end. A cell holding a tab, a line break or tabwriter's
// escape byte would make tabwriter lay the table out differently; then
// write hands the table to tabwriter itself.
type table struct {
	cols   int
	buf    []byte // the cells' text, one after the other
	ends   []int  // where each cell ends in buf
	runes  []int  // each cell's width in runes
	widest []int  // each column's widest cell
	start  int    // where the cell being appended begins
	plain  bool   // no cell holds a byte tabwriter treats specially
	out    []byte // write's buffer
	spaces [64]byte
}

// tableMinWidth and tablePadding are the commands' tabwriter settings:
// a column is its widest cell plus 2 spaces, and at least 2 wide.
const (
	tableMinWidth = 2
	tablePadding  = 2
)

// newTable returns a table of cols columns, sized for rows rows.
func newTable(cols, rows int) *table {
	return &table{cols: cols, ends: make([]int, 0, cols*rows), runes: make([]int, 0, cols*rows),
		widest: make([]int, cols), plain: true, buf: make([]byte, 0, 64*rows)}
}

// add appends s to the cell being written.
func (t *table) add(s string) { t.buf = append(t.buf, s...) }

// end ends the cell being written. Its width is its length: write
// counts runes instead when the table holds any byte beyond ASCII.
func (t *table) end() {
	n := len(t.buf) - t.start
	if col := len(t.ends) % t.cols; n > t.widest[col] {
		t.widest[col] = n
	}
	t.ends = append(t.ends, len(t.buf))
	t.runes = append(t.runes, n)
	t.start = len(t.buf)
}

// measure looks at the table's text once: a byte beyond ASCII makes it
// count each cell's runes, a tab, a line break or tabwriter's escape
// byte in a cell makes write hand the table to tabwriter.
func (t *table) measure() {
	if bytes.IndexByte(t.buf, '\t') >= 0 || bytes.IndexByte(t.buf, '\n') >= 0 ||
		bytes.IndexByte(t.buf, '\v') >= 0 || bytes.IndexByte(t.buf, '\f') >= 0 {
		t.plain = false
	}
	if ascii(t.buf) {
		return
	}
	t.plain = t.plain && bytes.IndexByte(t.buf, tabwriter.Escape) < 0
	clear(t.widest)
	begin := 0
	for i, end := range t.ends {
		n := utf8.RuneCount(t.buf[begin:end])
		t.runes[i] = n
		if col := i % t.cols; n > t.widest[col] {
			t.widest[col] = n
		}
		begin = end
	}
}

// ascii reports whether b holds only ASCII bytes, 8 at a time.
func ascii(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// row appends a row of whole cells.
func (t *table) row(cells ...string) {
	for _, c := range cells {
		t.add(c)
		t.end()
	}
}

// write writes the table to w.
func (t *table) write(w io.Writer) error {
	t.measure()
	if !t.plain {
		return t.tabwriter(w)
	}
	width := make([]int, t.cols)
	for i, n := range t.widest {
		width[i] = max(tableMinWidth, n+tablePadding)
	}
	for i := range t.spaces {
		t.spaces[i] = ' '
	}
	t.out = make([]byte, 0, 64<<10)
	begin := 0
	for i, end := range t.ends {
		t.out = append(t.out, t.buf[begin:end]...)
		begin = end
		col := i % t.cols
		if col == t.cols-1 {
			t.out = append(t.out, '\n')
			if len(t.out) >= 60<<10 {
				if _, err := w.Write(t.out); err != nil {
					return err
				}
				t.out = t.out[:0]
			}
			continue
		}
		for pad := width[col] - t.runes[i]; pad > 0; pad -= len(t.spaces) {
			t.out = append(t.out, t.spaces[:min(pad, len(t.spaces))]...)
		}
	}
	_, err := w.Write(t.out)
	return err
}

// tabwriter writes the table through text/tabwriter, cells separated by
// tabs as the commands write them.
func (t *table) tabwriter(w io.Writer) error {
	tw := tabwriter.NewWriter(w, tableMinWidth, 4, tablePadding, ' ', 0)
	var line strings.Builder
	begin := 0
	for i, end := range t.ends {
		line.Write(t.buf[begin:end])
		begin = end
		if i%t.cols == t.cols-1 {
			line.WriteByte('\n')
			if _, err := io.WriteString(tw, line.String()); err != nil {
				return err
			}
			line.Reset()
		} else {
			line.WriteByte('\t')
		}
	}
	return tw.Flush()
}
