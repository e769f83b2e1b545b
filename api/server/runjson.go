package server

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/hookd/hookd/engine"
)

// writeRun answers run as writeJSON answers it, byte for byte, except
// that its steps go to the connection one at a time: encoding/json builds
// a whole answer in a buffer of its own and copies each step's JSON into
// it, a buffer grown by doubling past 2 MB for a step that printed 1 MiB
// and pooled across a collection (answering such a run allocated 4.4 MB,
// 2.2 MB now: TestWriteRunCopiesNoStep). The rest of the run is encoded
// by encoding/json with a null in place of each step, and the steps are
// written in their place. A step whose MarshalJSON fails (a field value
// encoding/json cannot encode) cuts the answer short where writeJSON
// sent an empty body: the client sees a broken answer either way.
func writeRun(w http.ResponseWriter, code int, run *engine.Run) {
	if run == nil || len(run.Steps) == 0 {
		writeJSON(w, code, run)
		return
	}
	rest := *run
	rest.Steps = make([]*engine.StepResult, len(run.Steps)) // each one null
	b, err := json.Marshal(&rest)
	if err != nil {
		writeJSON(w, code, run) // its error, as before
		return
	}
	at := topLevelKey(b, `"steps":`)
	nulls := append([]byte{'['}, bytes.Repeat([]byte("null,"), len(run.Steps))...)
	nulls[len(nulls)-1] = ']'
	if at < 0 || !bytes.HasPrefix(b[at:], nulls) {
		writeJSON(w, code, run)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b[:at+1])
	for i, s := range run.Steps {
		if i > 0 {
			_, _ = w.Write([]byte{','})
		}
		if s == nil {
			_, _ = w.Write([]byte("null"))
			continue
		}
		step, err := s.MarshalJSON()
		if err != nil {
			return
		}
		_, _ = w.Write(step)
	}
	_, _ = w.Write(append(b[at+len(nulls)-1:], '\n'))
}

// topLevelKey is where the value of key (quoted, with its colon) of the
// JSON object b starts, -1 if b has no such key at its top level: a key
// of the same name in an object within it (an event's payload) is not
// the one.
func topLevelKey(b []byte, key string) int {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			// At the top level, a string followed by a colon is a key.
			if depth == 1 && bytes.HasPrefix(b[i:], []byte(key)) {
				return i + len(key)
			}
			inString = true
		}
	}
	return -1
}
