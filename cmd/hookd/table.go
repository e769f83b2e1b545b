package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/textsafe"
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

	// On a terminal (layout): the width to fit and the columns to narrow,
	// least useful first; and the colour of a cell.
	width int
	order []giveWay
	paint func(row, col int, cell string) string
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
	if t.width > 0 || t.paint != nil {
		return t.writeTerminal(w)
	}
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

// giveWay is a column a table narrows to fit a terminal, down to min
// runes.
type giveWay struct{ col, min int }

// writeTerminal writes the table for a terminal: each cell on one line
// (a tab or line break in it is a space), the columns narrowed in
// t.order until the table fits t.width (a cut cell ends in "…"; a table
// that does not fit with every listed column at its minimum runs over), and
// the cells t.paint names an SGR code for coloured. With colours the
// cells are escaped as termSafe escapes text (textsafe) and the table is written
// raw (termSafe would escape the colours too).
func (t *table) writeTerminal(w io.Writer) error {
	cells := make([]string, len(t.ends))
	widths := make([]int, len(t.ends))
	widest := make([]int, t.cols)
	begin := 0
	for i, end := range t.ends {
		c := string(t.buf[begin:end])
		begin = end
		c = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, c)
		if t.paint != nil {
			c = string(textsafe.Append(nil, []byte(c)))
		}
		cells[i], widths[i] = c, utf8.RuneCountInString(c)
		widest[i%t.cols] = max(widest[i%t.cols], widths[i])
	}
	limit := slices.Clone(widest)
	if t.width > 0 {
		total := widest[t.cols-1]
		for _, n := range widest[:t.cols-1] {
			total += max(tableMinWidth, n+tablePadding)
		}
		for _, g := range t.order {
			if total <= t.width {
				break
			}
			if cut := min(total-t.width, limit[g.col]-max(g.min, 2)); cut > 0 {
				limit[g.col] -= cut
				total -= cut
			}
		}
	}
	var out []byte
	for i, c := range cells {
		row, col := i/t.cols, i%t.cols
		n := widths[i]
		if n > limit[col] {
			c = string([]rune(c)[:limit[col]-1]) + "…"
			n = limit[col]
		}
		code := ""
		if t.paint != nil {
			code = t.paint(row, col, cells[i])
		}
		if code != "" {
			out = append(out, "\x1b["+code+"m"...)
		}
		out = append(out, c...)
		if code != "" {
			out = append(out, "\x1b[0m"...)
		}
		if col == t.cols-1 {
			out = append(out, '\n')
			continue
		}
		out = append(out, strings.Repeat(" ", max(tableMinWidth, limit[col]+tablePadding)-n)...)
	}
	if t.paint != nil {
		writeRaw(w, string(out))
		return nil
	}
	_, err := w.Write(out)
	return err
}

// layout fits t to the terminal stdout is, narrowing the columns in
// order (least useful first), and colours its status words when colour
// is on (colored). Piped, t stays as tabwriter would lay it out.
func (c *cli) layout(t *table, order ...giveWay) *table {
	t.width, t.order = c.columns, order
	if c.colored() {
		t.paint = paintStatus
	}
	return t
}

// colored reports whether tables are coloured: --color always, or on a
// terminal unless --color never, NO_COLOR (https://no-color.org) or
// TERM=dumb.
func (c *cli) colored() bool {
	switch c.color {
	case "always":
		return true
	case "never":
		return false
	}
	return c.columns > 0 && c.env("NO_COLOR") == "" && c.env("TERM") != "dumb"
}

// paintStatus colours a table's header bold and each cell that begins
// with a run status (or BROKEN) by what it means: green for completed,
// red for what failed, yellow for what did not run, cyan for what runs.
func paintStatus(row, _ int, cell string) string {
	if row == 0 {
		return "1"
	}
	word, _, _ := strings.Cut(cell, " ")
	word = strings.TrimSuffix(word, ",")
	switch engine.Status(word) {
	case engine.StatusCompleted:
		return "32"
	case engine.StatusFailed, engine.StatusInterrupted:
		return "31"
	case engine.StatusSkipped, engine.StatusDropped, engine.StatusCancelled:
		return "33"
	case engine.StatusRunning, engine.StatusQueued:
		return "36"
	}
	if strings.Contains(cell, "[BROKEN]") {
		return "31"
	}
	return ""
}
