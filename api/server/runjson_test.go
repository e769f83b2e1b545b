package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// megabyteRun is a run whose shell step printed 1 MiB, as the daemon
// soak's runs.
func megabyteRun() *engine.Run {
	line := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 2) + "\n"
	out := strings.Repeat(line, (1<<20)/len(line))
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	return &engine.Run{ID: "r1", Hook: "dump", Trigger: "event", Status: engine.StatusCompleted,
		StartedAt: t0, FinishedAt: t0.Add(time.Second), Fingerprint: "abc",
		Steps: []*engine.StepResult{{Index: 0, Name: "dump", Type: "shell", Output: out, ExitCode: new(0), Started: t0,
			Fields: map[string]any{"stdout": out, "stderr": "", "command": "cat dump"}}}}
}

// TestWriteRunAnswersAsWriteJSON: writeRun's answer is writeJSON's, byte
// for byte: runs without steps, with several, with a nil one, with text
// encoding/json escapes (<, &, U+2028, invalid UTF-8) and with a key
// "steps" in the event's payload and in a step's fields.
func TestWriteRunAnswersAsWriteJSON(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	tricky := &engine.StepResult{Index: 1, Type: "shell", Output: "<b>&\u2028\xff \"steps\":[null]", Error: "exit 1 <x>", Started: t0,
		Fields: map[string]any{"steps": []any{nil}, "n": 3.5}}
	runs := map[string]*engine.Run{
		"nil":      nil,
		"no steps": {ID: "r0", Hook: "h", Status: engine.StatusSkipped, Reason: "in_flight: <r>"},
		"1 MiB":    megabyteRun(),
		"several": {ID: "r2", Hook: "h<>", Status: engine.StatusFailed, Event: json.RawMessage(`{"steps":[null,null,null],"x":"]}"}`),
			Steps: []*engine.StepResult{megabyteRun().Steps[0], nil, tricky}, Error: "step 2: <&>", StartedAt: t0},
	}
	for name, run := range runs {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		writeJSON(want, http.StatusOK, run)
		writeRun(got, http.StatusOK, run)
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) || got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("%s: writeRun answered %d %q %.300q, writeJSON %d %q %.300q", name,
				got.Code, got.Header().Get("Content-Type"), got.Body, want.Code, want.Header().Get("Content-Type"), want.Body)
		}
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d discard) Header() http.Header       { return d.h }
func (discard) WriteHeader(int)             {}
func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestWriteRunCopiesNoStep: answering a run whose step printed 1 MiB
// allocates about its step's JSON (2.1 MB), not encoding/json's copy of
// it into a buffer of its own as well (4.4 MB allocated with writeJSON).
//
// Not parallel: it counts the allocations of the whole process.
func TestWriteRunCopiesNoStep(t *testing.T) {
	run := megabyteRun()
	size := httptest.NewRecorder()
	writeJSON(size, http.StatusOK, run)
	least := uint64(1 << 62)
	for range 5 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		writeRun(discard{http.Header{}}, http.StatusOK, run)
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	t.Logf("%d bytes allocated to answer %d bytes", least, size.Body.Len())
	if least > uint64(size.Body.Len())*5/4 {
		t.Errorf("answering a run of %d bytes allocated %d bytes; want at most 1.25 times the answer", size.Body.Len(), least)
	}
}
