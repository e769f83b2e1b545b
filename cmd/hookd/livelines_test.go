package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// liveLines joins chunks into lines per run, step and stream; a run's
// end prints what is left of its lines, then the end.
func TestLiveLines(t *testing.T) {
	c := func(run, step, stream, text string) engine.LiveChunk {
		return engine.LiveChunk{RunID: run, Hook: "h", Step: step, Stream: stream, Text: text}
	}
	long := strings.Repeat("x", maxLivePartial+1)
	tests := []struct {
		name   string
		chunks []engine.LiveChunk
		want   []string
	}{
		{"a line in pieces", []engine.LiveChunk{c("r1", "s0", "stdout", "hel"), c("r1", "s0", "stdout", "lo\nwor"), c("r1", "s0", "stdout", "ld\r\n")},
			[]string{"r1 s0 stdout: hello", "r1 s0 stdout: world"}},
		{"streams and steps apart", []engine.LiveChunk{c("r1", "s0", "stdout", "out "), c("r1", "s0", "stderr", "err\n"), c("r1", "s1", "stdout", "next\n"), c("r1", "s0", "stdout", "line\n")},
			[]string{"r1 s0 stderr: err", "r1 s1 stdout: next", "r1 s0 stdout: out line"}},
		{"the end prints the rest, then itself", []engine.LiveChunk{c("r1", "s0", "stdout", "no newline"), c("r2", "s0", "stdout", "other run"), {RunID: "r1", Hook: "h", End: true, Dropped: 3}},
			[]string{"r1 s0 stdout: no newline", "end r1 dropped 3"}},
		{"a long line without an end is printed", []engine.LiveChunk{c("r1", "s0", "stdout", long)},
			[]string{"r1 s0 stdout: " + long}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l liveLines
			var got []string
			line := func(c engine.LiveChunk, text string) {
				if c.End {
					got = append(got, fmt.Sprintf("end %s dropped %d", c.RunID, c.Dropped))
					return
				}
				got = append(got, c.RunID+" "+c.Step+" "+c.Stream+": "+text)
			}
			for _, ch := range tt.chunks {
				l.add(ch, line)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("lines:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
