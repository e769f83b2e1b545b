package steps

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookd/hookd/engine"
)

// setJSON takes the http step's json: field, a YAML structure that the
// step encodes as its JSON body: keys are literal, and each string leaf is
// rendered (placeholders and filters) and sent as a JSON string, encoded
// by encoding/json, so no value can end its string and add structure.
// It is an error with body: (one body), with a placeholder that does not
// parse, and with a leaf whose last filter is json (it would be encoded
// twice). Without a Content-Type header, the step sends application/json.
func (s *httpStep) setJSON(cfg engine.Decoder, c httpConfig) error {
	if c.Body != "" {
		return fieldErr(cfg, "json", "json: and body: both give the request body: keep one")
	}
	if _, err := json.Marshal(c.JSON); err != nil {
		return fieldErr(cfg, "json", "cannot be sent as JSON: %v", err)
	}
	var bad error
	walkStrings(c.JSON, "json", func(path, str string) {
		if bad != nil {
			return
		}
		phs, err := engine.ParsePlaceholders(str)
		if err != nil {
			bad = fieldErr(cfg, path, "%v", err)
			return
		}
		for _, ph := range phs {
			if ph.LastFilter() == "json" {
				bad = fieldErr(cfg, path, "placeholder {{%s}}: a json: body encodes every string itself; drop | json (the value would be encoded twice)", ph.Path)
				return
			}
		}
	})
	if bad != nil {
		return bad
	}
	s.json = c.JSON
	hasType := false
	for _, h := range s.headers {
		hasType = hasType || strings.EqualFold(h.name, "Content-Type")
	}
	if !hasType {
		s.headers = append(s.headers, envVar{"Content-Type", "application/json"})
	}
	return nil
}

// encodeJSONBody renders the string leaves of a json: body and encodes
// the result.
func encodeJSONBody(v any, scope *engine.Scope) (string, error) {
	rendered, err := expandData(v, "json", scope, false)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(rendered)
	if err != nil {
		return "", fmt.Errorf("json: encode the body: %w", err)
	}
	return string(b), nil
}
