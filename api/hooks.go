package api

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
)

// GET /v1/hooks answers every hook, 10,000 of them on a large install,
// and `hookd list` asks for them each time it runs. Both ends of that
// answer are written here without reflection: appendHooksJSON writes the
// bytes encoding/json would write for []engine.HookStatus (compact), and
// decodeHooksJSON reads them back, handing anything it does not expect
// to encoding/json. Field for field, the struct's json tags decide;
// TestHooksJSONMatchesEncodingJSON and FuzzDecodeHooksJSON hold the two
// to encoding/json.

// AppendHooks appends hs to b as json.Marshal writes it.
func AppendHooks(b []byte, hs []engine.HookStatus) ([]byte, error) {
	if hs == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i := range hs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendHookJSON(b, &hs[i]); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendHookJSON(b []byte, h *engine.HookStatus) ([]byte, error) {
	var err error
	b = append(b, `{"name":`...)
	b = engine.AppendJSONString(b, h.Name)
	if h.Project != "" {
		b = append(b, `,"project_id":`...)
		b = engine.AppendJSONString(b, h.Project)
	}
	b = append(b, `,"trigger":`...)
	b = engine.AppendJSONString(b, h.Trigger)
	b = append(b, `,"enabled":`...)
	b = strconv.AppendBool(b, h.Enabled)
	b = append(b, `,"paused":`...)
	b = strconv.AppendBool(b, h.Paused)
	if !h.NextDue.IsZero() {
		b = append(b, `,"next_due":"`...)
		if b, err = h.NextDue.AppendText(b); err != nil {
			return nil, err
		}
		b = append(b, '"')
	}
	if h.InFlight != "" {
		b = append(b, `,"in_flight":`...)
		b = engine.AppendJSONString(b, h.InFlight)
	}
	b = append(b, `,"queued":`...)
	b = strconv.AppendInt(b, int64(h.Queued), 10)
	if h.LastRunID != "" {
		b = append(b, `,"last_run_id":`...)
		b = engine.AppendJSONString(b, h.LastRunID)
	}
	if h.LastStatus != "" {
		b = append(b, `,"last_status":`...)
		b = engine.AppendJSONString(b, string(h.LastStatus))
	}
	if h.LastCheckFailed != "" {
		b = append(b, `,"last_check_failed":`...)
		b = engine.AppendJSONString(b, h.LastCheckFailed)
	}
	if !h.LastStart.IsZero() {
		b = append(b, `,"last_start":"`...)
		if b, err = h.LastStart.AppendText(b); err != nil {
			return nil, err
		}
		b = append(b, '"')
	}
	b = append(b, `,"file":`...)
	b = engine.AppendJSONString(b, h.File)
	b = append(b, `,"version":`...)
	b = engine.AppendJSONString(b, h.Version)
	if h.Budget != nil {
		bj, err := json.Marshal(h.Budget)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"budget":`...)
		b = append(b, bj...)
	}
	if h.Sandbox != "" {
		b = append(b, `,"sandbox":`...)
		b = engine.AppendJSONString(b, h.Sandbox)
	}
	if h.Broken != nil {
		bj, err := json.Marshal(h.Broken)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"broken":`...)
		b = append(b, bj...)
	}
	return append(b, '}'), nil
}

// DecodeHooks decodes an answer of GET /v1/hooks. The answer of this
// build's daemon is parsed directly; anything else (an older daemon's
// indented answer parses too; an unknown field, an escape in a string, a
// null) goes to encoding/json, which decides.
func DecodeHooks(data []byte) ([]engine.HookStatus, error) {
	if hs, ok := parseHooksJSON(data); ok {
		return hs, nil
	}
	var hs []engine.HookStatus
	if err := json.Unmarshal(data, &hs); err != nil {
		return nil, err
	}
	return hs, nil
}

// parseHooksJSON parses data when it is an array of objects whose keys
// are exactly HookStatus's json names, with strings without escapes. It
// answers ok only when json.Unmarshal would decode data to the same
// value; on anything else it gives up.
func parseHooksJSON(data []byte) (hs []engine.HookStatus, ok bool) {
	p := jsonParser{b: data}
	if !p.consume('[') {
		return nil, false
	}
	hs = make([]engine.HookStatus, 0, min(p.count(), 1<<20))
	if p.consume(']') {
		return hs, p.end()
	}
	for {
		hs = append(hs, engine.HookStatus{})
		if !p.hook(&hs[len(hs)-1]) {
			return nil, false
		}
		if p.consume(',') {
			continue
		}
		if p.consume(']') {
			return hs, p.end()
		}
		return nil, false
	}
}

// jsonParser reads the JSON of parseHooksJSON: b from i on.
type jsonParser struct {
	b []byte
	i int
	// triggers holds the trigger texts read so far: a few texts repeat
	// over thousands of hooks, one string each.
	triggers map[string]string
}

// count guesses the number of hooks: the number of "name" keys.
func (p *jsonParser) count() int { return bytes.Count(p.b, []byte(`"name":`)) }

func (p *jsonParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// consume skips white space and c, when c comes next.
func (p *jsonParser) consume(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (p *jsonParser) end() bool {
	p.space()
	return p.i == len(p.b)
}

// str reads a string without escapes and returns its contents (a
// subslice of b), or nil, false.
func (p *jsonParser) str() ([]byte, bool) {
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	ascii := true
	for j := start; j < len(p.b); j++ {
		c := p.b[j]
		switch {
		case c == '"':
			s := p.b[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, false // encoding/json replaces invalid bytes
			}
			p.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// quoted reads a string without escapes and returns it with its quotes.
func (p *jsonParser) quoted() ([]byte, bool) {
	s, ok := p.str()
	if !ok {
		return nil, false
	}
	return p.b[p.i-len(s)-2 : p.i], true
}

func (p *jsonParser) boolean() (v, ok bool) {
	p.space()
	switch {
	case len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "true":
		p.i += 4
		return true, p.delimited()
	case len(p.b)-p.i >= 5 && string(p.b[p.i:p.i+5]) == "false":
		p.i += 5
		return false, p.delimited()
	}
	return false, false
}

// delimited reports whether a literal or number ends where it should:
// at the end, white space or a delimiter (json.Unmarshal rejects "truex").
func (p *jsonParser) delimited() bool {
	if p.i == len(p.b) {
		return true
	}
	switch p.b[p.i] {
	case ' ', '\t', '\n', '\r', ',', '}', ']':
		return true
	}
	return false
}

// integer reads a number in plain integer form that fits an int.
func (p *jsonParser) integer() (int, bool) {
	p.space()
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || (p.b[digits] == '0' && p.i-digits > 1) || !p.delimited() {
		return 0, false
	}
	n, err := strconv.Atoi(string(p.b[start:p.i]))
	return n, err == nil
}

// object reads a JSON object (of a budget) as raw bytes: whatever is
// between its braces, strings skipped whole; json.Unmarshal checks it.
func (p *jsonParser) object() ([]byte, bool) {
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	start, depth := p.i, 0
	for ; p.i < len(p.b); p.i++ {
		switch p.b[p.i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				p.i++
				return p.b[start:p.i], true
			}
		case '"':
			for p.i++; p.i < len(p.b) && p.b[p.i] != '"'; p.i++ {
				if p.b[p.i] == '\\' {
					p.i++
				}
			}
		}
	}
	return nil, false
}

// hook reads one object into h.
func (p *jsonParser) hook(h *engine.HookStatus) bool {
	if !p.consume('{') {
		return false
	}
	if p.consume('}') {
		return true
	}
	for {
		key, ok := p.str()
		if !ok || !p.consume(':') {
			return false
		}
		switch string(key) {
		case "name":
			ok = p.text(&h.Name)
		case "project_id":
			ok = p.text(&h.Project)
		case "trigger":
			var t []byte
			if t, ok = p.str(); ok {
				h.Trigger = p.intern(t)
			}
		case "enabled":
			h.Enabled, ok = p.boolean()
		case "paused":
			h.Paused, ok = p.boolean()
		case "next_due":
			var q []byte
			if q, ok = p.quoted(); ok {
				ok = h.NextDue.UnmarshalJSON(q) == nil
			}
		case "in_flight":
			ok = p.text(&h.InFlight)
		case "queued":
			h.Queued, ok = p.integer()
		case "last_run_id":
			ok = p.text(&h.LastRunID)
		case "last_status":
			var s []byte
			if s, ok = p.str(); ok {
				h.LastStatus = statusOf(s)
			}
		case "last_check_failed":
			ok = p.text(&h.LastCheckFailed)
		case "last_start":
			var q []byte
			if q, ok = p.quoted(); ok {
				ok = h.LastStart.UnmarshalJSON(q) == nil
			}
		case "file":
			ok = p.text(&h.File)
		case "version":
			ok = p.text(&h.Version)
		case "budget":
			// json.Unmarshal would fill a budget read before: a second
			// one is left to it.
			var raw []byte
			if raw, ok = p.object(); ok && h.Budget == nil {
				h.Budget = new(budget.SpendWindows)
				ok = json.Unmarshal(raw, h.Budget) == nil
			} else {
				ok = false
			}
		case "sandbox":
			ok = p.text(&h.Sandbox)
		case "broken":
			var raw []byte
			if raw, ok = p.object(); ok && h.Broken == nil {
				h.Broken = new(engine.BrokenFile)
				ok = json.Unmarshal(raw, h.Broken) == nil
			} else {
				ok = false
			}
		default:
			// json.Unmarshal matches keys case-insensitively and skips
			// unknown ones: it decides.
			return false
		}
		if !ok {
			return false
		}
		if p.consume(',') {
			continue
		}
		return p.consume('}')
	}
}

func (p *jsonParser) text(dst *string) bool {
	s, ok := p.str()
	if ok {
		*dst = string(s)
	}
	return ok
}

func (p *jsonParser) intern(b []byte) string {
	if s, ok := p.triggers[string(b)]; ok {
		return s
	}
	if p.triggers == nil {
		p.triggers = map[string]string{}
	}
	s := string(b)
	if len(p.triggers) < 1024 {
		p.triggers[s] = s
	}
	return s
}

// statusOf returns the status named b, without allocating for the known
// ones.
func statusOf(b []byte) engine.Status {
	if i := slices.IndexFunc(engine.Statuses, func(s engine.Status) bool { return string(s) == string(b) }); i >= 0 {
		return engine.Statuses[i]
	}
	return engine.Status(b)
}
