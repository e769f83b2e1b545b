package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/internal/human"
)

// printTranscript prints the model stage of a run: each model call with
// its retries and usage, each tool call with its arguments and result,
// and how the stage ended.
func printTranscript(w io.Writer, r *engine.Run) {
	tr, err := agent.DecodeTranscript(r)
	if err != nil {
		fmt.Fprintf(w, "\n  transcript: cannot read it: %v\n", err)
		return
	}
	if tr == nil {
		return
	}
	fmt.Fprintf(w, "\nmodel %s at %s, max_rounds %d", tr.Model, tr.BaseURL, tr.MaxRounds)
	if tr.Budget > 0 {
		fmt.Fprintf(w, ", max_tokens_per_run %d", tr.Budget)
	}
	fmt.Fprintln(w)
	if len(tr.Tools) > 0 {
		fmt.Fprintf(w, "  tools:     %s\n", strings.Join(tr.Tools, ", "))
	}
	if tr.System != "" {
		printBlock(w, "system", tr.System)
	}
	for i, rd := range tr.Rounds {
		c := rd.Call
		fmt.Fprintf(w, "\n  model call %d", i+1)
		if c.Model != "" {
			fmt.Fprintf(w, ", %s", c.Model)
		}
		fmt.Fprintf(w, ", %s", human.Duration(c.Took()))
		if n := c.Requests(); n > 1 {
			fmt.Fprintf(w, " over %d attempts", n)
		}
		if c.FinishReason != "" {
			fmt.Fprintf(w, ", finish %s", c.FinishReason)
		}
		if c.Usage != nil {
			fmt.Fprintf(w, ", tokens %d prompt + %d completion", c.Usage.Prompt, c.Usage.Completion)
			if c.Usage.Cached > 0 {
				fmt.Fprintf(w, " (%d cached)", c.Usage.Cached)
			}
		} else if c.Error == "" && c.AnsweredBy == "" {
			fmt.Fprint(w, ", usage not reported")
		}
		if c.AnsweredBy != "" {
			fmt.Fprintf(w, ", answered by handler %s instead of the model", c.AnsweredBy)
		}
		fmt.Fprintln(w)
		for _, a := range c.Attempts {
			what := a.Error
			if a.Status > 0 {
				what = fmt.Sprintf("HTTP %d: %s", a.Status, a.Error)
			}
			fmt.Fprintf(w, "    attempt failed: %s", engine.OneLine(what, 200))
			if a.Wait > 0 {
				fmt.Fprintf(w, "; retried after %s", a.Wait.Round(time.Millisecond))
				if a.RetryAfter {
					fmt.Fprint(w, " (Retry-After)")
				}
			}
			fmt.Fprintln(w)
			if a.Body != "" && a.Body != a.Error {
				fmt.Fprintf(w, "      body: %s\n", engine.OneLine(a.Body, 300))
			}
		}
		if c.Error != "" {
			fmt.Fprintf(w, "    error: %s\n", c.Error)
		}
		if c.Content != "" && len(rd.ToolCalls) > 0 {
			indentBlock(w, "    ", "text", c.Content)
		}
		for _, tc := range rd.ToolCalls {
			name := tc.Name
			if tc.Tool != "" && tc.Tool != tc.Name {
				name += " (" + tc.Tool + ")"
			}
			fmt.Fprintf(w, "    tool %s, id %s", name, tc.ID)
			if tc.IDGenerated {
				fmt.Fprint(w, " (made by hookd)")
			}
			fmt.Fprintf(w, ", %s\n", human.Duration(tc.Duration))
			fmt.Fprintf(w, "      arguments: %s\n", engine.OneLine(tc.Arguments, 300))
			if tc.InputAmendedBy != "" {
				fmt.Fprintf(w, "      arguments amended by handler %s\n", tc.InputAmendedBy)
			}
			if tc.DeniedBy != "" {
				fmt.Fprintf(w, "      denied by handler %s\n", tc.DeniedBy)
			}
			if tc.ResultAmendedBy != "" {
				fmt.Fprintf(w, "      result amended by handler %s\n", tc.ResultAmendedBy)
			}
			if tc.Error != "" {
				fmt.Fprintf(w, "      error: %s\n", engine.OneLine(tc.Error, 500))
				continue
			}
			res := tc.Result
			if tc.Truncated || len(tc.Result) < tc.ResultBytes {
				res += fmt.Sprintf("\n[%d bytes in all]", tc.ResultBytes)
			}
			indentBlock(w, "      ", "result", res)
		}
	}
	fmt.Fprintf(w, "\n  stopped:   %s", tr.Stop)
	if tr.Stop == "answer" {
		fmt.Fprintf(w, " after %d model call(s)", len(tr.Rounds))
	}
	fmt.Fprintln(w)
	switch t := tr.Tokens; {
	case t.Known:
		fmt.Fprintf(w, "  tokens:    %d prompt + %d completion = %d (%d cached)\n", t.Prompt, t.Completion, t.Prompt+t.Completion, t.Cached)
	case len(tr.Rounds) > 0:
		fmt.Fprintf(w, "  tokens:    unknown: the server did not report usage for every call (reported: %d prompt + %d completion)\n", t.Prompt, t.Completion)
	}
	for _, n := range tr.Notes {
		fmt.Fprintf(w, "  note:      %s\n", n)
	}
}

// indentBlock prints a titled block of text at an indent, at most 20
// lines of it.
func indentBlock(w io.Writer, indent, title, text string) {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		fmt.Fprintf(w, "%s%s: (empty)\n", indent, title)
		return
	}
	lines := strings.Split(text, "\n")
	if len(lines) == 1 && len(lines[0]) <= 100 {
		fmt.Fprintf(w, "%s%s: %s\n", indent, title, lines[0])
		return
	}
	fmt.Fprintf(w, "%s%s:\n", indent, title)
	const max = 20
	for i, l := range lines {
		if i == max {
			fmt.Fprintf(w, "%s  … %d more lines (hookd run --json has them all)\n", indent, len(lines)-max)
			break
		}
		fmt.Fprintf(w, "%s  %s\n", indent, l)
	}
}
