package store

import "github.com/hookd/hookd/engine"

// EncodeOutcome returns the JSON text that stores how r ended beyond its
// status (gate, cause, notes, tools, attempts), or ok false when there is
// nothing to store. Package store/postgres stores runs with this codec
// too, so that both stores keep a run alike.
func EncodeOutcome(r *engine.Run) (text string, ok bool, err error) {
	v, err := outcomeArg(r)
	if err != nil || v == nil {
		return "", false, err
	}
	return v.(string), true, nil
}

// DecodeOutcome fills r's outcome fields from text EncodeOutcome made.
func DecodeOutcome(r *engine.Run, text string) error { return decodeOutcome(r, text) }

// Collapsible reports whether r is a skip record that merges into the
// hook's latest identical one (a paused or disabled hook's, one per
// trigger) instead of being inserted.
func Collapsible(r *engine.Run) bool { return collapsible(r) }
