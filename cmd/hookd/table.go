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

	// On a terminal (layout): the width to fit, the columns to narrow,
	// least useful first, and the columns to drop, least useful first,
	// when narrowing is not enough; and the colour of a cell.
	width int
	order []giveWay
	drop  []int
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

// giveWay is a column a table narrows to fit a terminal: down to min
// runes, a cut cell ending in "…"; or, with short, to its compact form
// (a time as "3h ago" instead of its whole date).
type giveWay struct {
	col, min int
	// short is the compact form of the cell of the i-th row under the
	// header (which stays); "" keeps the cell as it is.
	short func(i int) string
}

// cut is a column narrowed down to min runes.
func cut(col, min int) giveWay { return giveWay{col: col, min: min} }

// compact is a column shown in its compact form, short.
func compact(col int, short func(i int) string) giveWay { return giveWay{col: col, short: short} }

// writeTerminal writes the table for a terminal: each cell on one line
// (a tab or line break in it is a space), fitted to t.width (fit), and
// the cells t.paint names an SGR code for coloured. With colours the
// cells are escaped as termSafe escapes text (textsafe) and the table is written
// raw (termSafe would escape the colours too).
func (t *table) writeTerminal(w io.Writer) error {
	cells := make([]string, len(t.ends))
	widths := make([]int, len(t.ends))
	widest := make([]int, t.cols)
	begin := 0
	for i, end := range t.ends {
		c := t.screen(string(t.buf[begin:end]))
		begin = end
		cells[i], widths[i] = c, utf8.RuneCountInString(c)
		widest[i%t.cols] = max(widest[i%t.cols], widths[i])
	}
	limit, dropped := slices.Clone(widest), make([]bool, t.cols)
	if t.width > 0 {
		limit, dropped = t.fit(cells, widths, widest)
	}
	last := t.cols - 1
	for last > 0 && dropped[last] {
		last--
	}
	var out []byte
	for i, c := range cells {
		row, col := i/t.cols, i%t.cols
		if dropped[col] {
			continue
		}
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
		if col == last {
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

// screen is a cell as a terminal shows it: on one line, and escaped
// when the table is coloured.
func (t *table) screen(c string) string {
	c = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, c)
	if t.paint != nil {
		c = string(textsafe.Append(nil, []byte(c)))
	}
	return c
}

// fit chooses how the table fits t.width: when it does not fit even
// with every column of t.order at its least (min runes, or compact),
// the columns of t.drop are dropped, in order, until it does; then the
// columns left are narrowed in t.order, each as far as it needs, until
// the table fits (a compact column's cells are replaced in cells and
// widths). It returns each column's width and which are dropped. A table
// that does not fit with every column left at its least runs over.
func (t *table) fit(cells []string, widths, widest []int) (limit []int, dropped []bool) {
	least := slices.Clone(widest)
	shorts := make(map[int][]string)
	for _, g := range t.order {
		if g.short == nil {
			least[g.col] = min(widest[g.col], max(g.min, 2))
			continue
		}
		short := make([]string, len(cells)/t.cols)
		n := widths[g.col] // the header's
		for row := 1; row < len(short); row++ {
			i := row*t.cols + g.col
			if s := g.short(row - 1); s != "" {
				short[row] = t.screen(s)
			} else {
				short[row] = cells[i]
			}
			n = max(n, utf8.RuneCountInString(short[row]))
		}
		if n < widest[g.col] {
			shorts[g.col], least[g.col] = short, n
		}
	}
	dropped = make([]bool, t.cols)
	for _, col := range t.drop {
		if tableWidth(least, dropped) <= t.width {
			break
		}
		dropped[col] = true
	}
	limit = slices.Clone(widest)
	for _, g := range t.order {
		total := tableWidth(limit, dropped)
		if total <= t.width {
			break
		}
		if dropped[g.col] || limit[g.col] <= least[g.col] {
			continue
		}
		if short, ok := shorts[g.col]; ok {
			for row := 1; row < len(short); row++ {
				i := row*t.cols + g.col
				cells[i], widths[i] = short[row], utf8.RuneCountInString(short[row])
			}
			limit[g.col] = least[g.col]
			continue
		}
		limit[g.col] -= min(total-t.width, limit[g.col]-least[g.col])
	}
	return limit, dropped
}

// tableWidth is how wide a table's lines are at most with its columns
// width runes wide, less the dropped ones: each column but the last
// padded.
func tableWidth(width []int, dropped []bool) int {
	total, last := 0, -1
	for col := range width {
		if dropped[col] {
			continue
		}
		if last >= 0 {
			total += max(tableMinWidth, width[last]+tablePadding)
		}
		last = col
	}
	if last >= 0 {
		total += width[last]
	}
	return total
}

// layout fits t to the terminal stdout is, narrowing the columns in
// order (least useful first) and, when that is not enough, dropping
// those of drop (least useful first), and colours its status words
// when colour is on (colored). Piped, t stays as tabwriter would lay it
// out.
func (c *cli) layout(t *table, drop []int, order ...giveWay) *table {
	t.width, t.order, t.drop = c.columns, order, drop
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
