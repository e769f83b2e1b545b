package dashboard

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/internal/human"
)

// The charts are inline SVG built here from numbers and escaped text;
// colours come from app.css by class (st-STATUS).

// Sizes of the strip of a hook's latest runs.
const (
	stripBar    = 6 // width of one run's bar
	stripGap    = 1
	stripHeight = 24
	stripMin    = 3 // height of a run that took no time (or did not run)
)

// strip draws a hook's latest runs (newest first in briefs) as bars, the
// oldest on the left: the colour says how each ended, the height how long
// it took (on a log scale, relative to the longest).
func strip(briefs []engine.RunBrief, slots int) template.HTML {
	width := slots * (stripBar + stripGap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="strip" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="the latest %d runs">`,
		width, stripHeight, width, stripHeight, len(briefs))
	var longest time.Duration
	for _, r := range briefs {
		longest = max(longest, r.Duration())
	}
	fmt.Fprintf(&b, `<rect class="band" x="0" y="%d" width="%d" height="1"/>`, stripHeight-1, width)
	buf := make([]byte, 0, 256)
	for i, r := range briefs {
		x := width - (i+1)*(stripBar+stripGap)
		h := float64(stripMin)
		if d := r.Duration(); d > 0 && longest > 0 {
			h += (stripHeight - stripMin) * math.Log1p(d.Seconds()) / math.Log1p(longest.Seconds())
		}
		// Built with appends, not fmt: the hooks page draws 50 of these
		// for each of its hooks.
		buf = append(buf[:0], `<a href="/runs/`...)
		buf = append(buf, escapeText(url.PathEscape(r.ID))...)
		buf = append(buf, `"><rect class="`...)
		buf = append(buf, escapeText(statusClass(r.Status, r.CheckFailed))...)
		buf = append(buf, `" x="`...)
		buf = strconv.AppendInt(buf, int64(x), 10)
		buf = append(buf, `" y="`...)
		buf = strconv.AppendFloat(buf, stripHeight-h, 'f', 1, 64)
		buf = append(buf, `" width="`...)
		buf = strconv.AppendInt(buf, stripBar, 10)
		buf = append(buf, `" height="`...)
		buf = strconv.AppendFloat(buf, h, 'f', 1, 64)
		buf = append(buf, `"><title>`...)
		buf = append(buf, escapeText(briefTitle(r))...)
		buf = append(buf, `</title></rect></a>`...)
		b.Write(buf)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func briefTitle(r engine.RunBrief) string {
	b := make([]byte, 0, 64)
	b = append(b, r.Hook...)
	b = append(b, ' ')
	b = append(b, r.Status...)
	if r.CheckFailed != "" {
		b = append(b, ", check failed: "...)
		b = append(b, r.CheckFailed...)
	}
	b = append(b, ' ')
	b = r.QueuedAt.Local().AppendFormat(b, "01-02 15:04:05")
	if d := r.Duration(); d > 0 {
		b = append(b, ", "...)
		b = append(b, human.Duration(d)...)
	}
	return string(b)
}

// escapeText escapes s for SVG text and attributes; most of what the
// charts write (ids, statuses, times) needs nothing, and is returned as
// is.
func escapeText(s string) string {
	if !strings.ContainsAny(s, `<>&'"`) {
		return s
	}
	return html.EscapeString(s)
}

// Sizes of the 24-hour timeline.
const (
	tlLabel  = 160 // the hook names' column
	tlWidth  = 720 // the time axis
	tlRow    = 16
	tlAxis   = 20 // the hour labels under the rows
	tlMinBar = 2
	tlPad    = 30 // right of the axis: "now"
)

// timeline draws the runs queued in the span before now, one row per
// hook, each run a bar from its start to its end.
func timeline(briefs []engine.RunBrief, now time.Time, span time.Duration) template.HTML {
	rows := map[string][]engine.RunBrief{}
	for _, r := range briefs {
		rows[r.Hook] = append(rows[r.Hook], r)
	}
	names := make([]string, 0, len(rows))
	for n := range rows {
		names = append(names, n)
	}
	sort.Strings(names)
	height := len(names)*tlRow + tlAxis
	width := tlLabel + tlWidth + tlPad
	span = zoom(briefs, now, span)
	start := now.Add(-span)
	x := func(t time.Time) float64 {
		f := float64(t.Sub(start)) / float64(span)
		return tlLabel + math.Max(0, math.Min(1, f))*tlWidth
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="runs of the last %s by hook">`,
		width, height, width, height, human.Duration(span))
	for i := range names {
		if i%2 == 0 {
			fmt.Fprintf(&b, `<rect class="band" x="%d" y="%d" width="%d" height="%d"/>`, tlLabel, i*tlRow, tlWidth, tlRow)
		}
	}
	// Grid lines and labels on round times, about six of them; none so
	// close to "now" that the labels would overlap.
	step := tick(span)
	for t := start.Truncate(step).Add(step); t.Before(now); t = t.Add(step) {
		if x(now)-x(t) < tlLabelGap {
			break
		}
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="0" x2="%.1f" y2="%d"/>`, x(t), x(t), len(names)*tlRow)
		fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x(t), height-6, t.Local().Format("15:04"))
	}
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">now</text>`, tlLabel+tlWidth, height-6)
	for i, n := range names {
		y := i * tlRow
		fmt.Fprintf(&b, `<text class="label" x="%d" y="%d">%s</text>`, tlLabel-8, y+tlRow-4, html.EscapeString(truncate(n, 22)))
		for _, r := range rows[n] {
			from := r.StartedAt
			if from.IsZero() {
				from = r.QueuedAt
			}
			to := r.FinishedAt
			if to.IsZero() {
				to = now // still running, or queued
			}
			x0, x1 := x(from), x(to)
			fmt.Fprintf(&b, `<a href="/runs/%s"><rect class="%s" x="%.1f" y="%d" width="%.1f" height="%d"><title>%s</title></rect></a>`,
				html.EscapeString(url.PathEscape(r.ID)), html.EscapeString(statusClass(r.Status, r.CheckFailed)), x0, y+2, math.Max(tlMinBar, x1-x0), tlRow-4,
				html.EscapeString(briefTitle(r)))
		}
	}
	if len(names) == 0 {
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="12">no runs in the last %s</text>`, tlLabel, human.Duration(span))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// tlLabelGap is how close (in pixels) a time label may come to "now".
const tlLabelGap = 44

// zoomSpans are the time ranges the timeline zooms to.
var zoomSpans = []time.Duration{15 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour}

// zoom narrows span to the shortest of spans that holds every run: on a
// new install, runs of the last minutes spread over the axis instead of
// bunching at "now".
func zoom(briefs []engine.RunBrief, now time.Time, span time.Duration) time.Duration {
	oldest := now
	for _, r := range briefs {
		if t := r.QueuedAt; !t.IsZero() && t.Before(oldest) {
			oldest = t
		}
		if t := r.StartedAt; !t.IsZero() && t.Before(oldest) {
			oldest = t
		}
	}
	for _, s := range zoomSpans {
		if s < span && now.Sub(oldest) <= s*9/10 {
			return s
		}
	}
	return span
}

// tick is the step between the time axis' labels for span: 3 hours for
// a day, and so on down to 5 minutes for a quarter of an hour.
func tick(span time.Duration) time.Duration {
	for _, t := range []time.Duration{5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour} {
		if span/t <= 8 {
			return t
		}
	}
	return 3 * time.Hour
}

// bar is one row of a run's waterfall.
type bar struct {
	label string
	class string // st-STATUS, or the kind: step, model, tool
	from  time.Time
	d     time.Duration
	title string
}

// Sizes of the waterfall.
const (
	wfLabel = 220
	wfWidth = 600
	wfRow   = 18
)

// waterfall draws when each step, model call and tool call of a run ran,
// against the run's time. A tool call's start is not recorded: it is
// placed after its model call's answer and the calls before it in the
// same round, which is how hookd runs them.
func waterfall(r *engine.Run, tr *agent.Transcript, now time.Time) template.HTML {
	var bars []bar
	for _, s := range r.Steps {
		label := fmt.Sprintf("step %d %s", s.Index, s.Type)
		if s.Name != "" {
			label = fmt.Sprintf("step %d %s", s.Index, s.Name)
		}
		class := "step"
		if s.Error != "" {
			class = "st-failed"
		}
		bars = append(bars, bar{label, class, s.Started, s.Duration, label + ", " + human.Duration(s.Duration)})
	}
	if tr != nil {
		for i, rd := range tr.Rounds {
			c := rd.Call
			label := fmt.Sprintf("model call %d", i+1)
			if c.Started.IsZero() {
				continue
			}
			total := c.Took() // its retries and waits too
			bars = append(bars, bar{label, "model", c.Started, total, label + ", " + human.Duration(total)})
			at := c.Started.Add(total)
			for _, tc := range rd.ToolCalls {
				class := "tool"
				if tc.DeniedBy != "" || tc.Error != "" {
					class = "st-failed"
				}
				name := tc.Tool
				if name == "" {
					name = tc.Name
				}
				bars = append(bars, bar{"  tool " + name, class, at, tc.Duration, "tool " + name + ", " + human.Duration(tc.Duration)})
				at = at.Add(tc.Duration)
			}
		}
	}
	if len(bars) == 0 {
		return ""
	}
	start := r.StartedAt
	end := r.FinishedAt
	if end.IsZero() {
		end = now
	}
	for _, b := range bars {
		if !b.from.IsZero() && (start.IsZero() || b.from.Before(start)) {
			start = b.from
		}
		if e := b.from.Add(b.d); e.After(end) {
			end = e
		}
	}
	total := end.Sub(start)
	if total <= 0 {
		total = time.Millisecond
	}
	x := func(t time.Time) float64 { return wfLabel + float64(t.Sub(start))/float64(total)*wfWidth }
	height := len(bars)*wfRow + wfRow
	width := wfLabel + wfWidth + 60
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg class="waterfall" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="timing of the run">`,
		width, height, width, height)
	for i, b := range bars {
		y := i * wfRow
		fmt.Fprintf(&sb, `<text class="label" x="%d" y="%d">%s</text>`, wfLabel-8, y+wfRow-5, html.EscapeString(truncate(b.label, 30)))
		if b.from.IsZero() {
			continue
		}
		x0 := x(b.from)
		w := math.Max(1, x(b.from.Add(b.d))-x0)
		fmt.Fprintf(&sb, `<rect class="%s" x="%.1f" y="%d" width="%.1f" height="%d"><title>%s</title></rect>`,
			html.EscapeString(b.class), x0, y+3, w, wfRow-6, html.EscapeString(b.title))
		fmt.Fprintf(&sb, `<text class="axis" x="%.1f" y="%d">%s</text>`, x0+w+4, y+wfRow-5, human.Duration(b.d))
	}
	fmt.Fprintf(&sb, `<text class="axis" x="%d" y="%d">0</text><text class="axis" x="%d" y="%d" text-anchor="end">%s</text>`,
		wfLabel, height-4, wfLabel+wfWidth, height-4, human.Duration(total))
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}
