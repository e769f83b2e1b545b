package steps

import (
	"strings"
	"testing"
)

// TestHTTPJSONBodyPlaces: in a JSON body, a placeholder inside a string
// is escaped for it and one outside stands only as | json; the other two
// placements are load errors, since a value there (`1}`, `[1, 2]`, or a
// string quoted twice) breaks the body or changes its shape. Without a
// JSON Content-Type the body is text and any placement loads.
func TestHTTPJSONBodyPlaces(t *testing.T) {
	const head = "url: https://example.com\nmethod: post\nheaders: {Content-Type: application/json}\nbody: "
	for _, c := range []struct{ body, err string }{
		{`'{"t": "{{event.x}}", "n": {{event.n | json}}, "l": {{event.l | tail 2 | json}}}'`, ""},
		{`'{"t": "say \"{{event.x}}\" and \\ {{event.y | upper}}", "lit": {{"1"}}}'`, ""},
		{`'{"t": "{{event.x | json}}"}'`, `body: placeholder {{event.x | json}} stands inside a JSON string, where | json adds a second pair of quotes: write {{event.x}} there`},
		{`'{"t": "\"{{event.x | trim | json}}"}'`, `write {{event.x | trim}} there (escaped for the string), or {{event.x | trim | json}} without the quotes`},
		{`'{"n": {{event.n}}}'`, `body: placeholder {{event.n}} stands outside a JSON string, where its text would be read as JSON`},
		{`'{"a": "x", "n": {{event.n | upper}}}'`, `put it inside quotes, "{{event.n | upper}}", or make it a JSON literal, {{event.n | upper | json}}`},
		{`'{{steps.build.output}}'`, `placeholder {{steps.build.output}} stands outside a JSON string`},
	} {
		_, err := newStep(t, "http", head+c.body, 0)
		if c.err == "" && err != nil {
			t.Errorf("%s: %v", c.body, err)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %v\nwant %s", c.body, err, c.err)
		}
	}
	if _, err := newStep(t, "http", "url: https://example.com\nmethod: post\nbody: '{\"n\": {{event.n}}}'", 0); err != nil {
		t.Errorf("a text body: %v", err)
	}
}
