package steps

import (
	"fmt"
	"strings"

	"github.com/hookd/hookd/engine"
)

// checkJSONBodyPlaces checks where each placeholder of a JSON body stands,
// so that no value can change the body's structure or leave it invalid:
// inside a JSON string a value is escaped for the string, so its last
// filter may not be json (that adds a second pair of quotes: "\"x\"");
// outside a string it is inserted as a JSON literal only through | json
// ("n": {{event.count | json}}); bare there, the escaped text would stand
// as JSON of its own ("n": 1} or [1, 2] in a value, the body broken or
// retyped). A literal {{"text"}} is the author's text and stands anywhere.
func checkJSONBodyPlaces(body string, phs []engine.Placeholder) error {
	inString, escaped, next := false, false, 0
	for _, ph := range phs {
		for ; next < ph.Start; next++ {
			switch c := body[next]; {
			case escaped:
				escaped = false
			case inString && c == '\\':
				escaped = true
			case c == '"':
				inString = !inString
			}
		}
		next = ph.End
		if ph.IsLiteral() {
			continue
		}
		text := body[ph.Start:ph.End]
		switch json := ph.LastFilter() == "json"; {
		case inString && json:
			bare := strings.TrimSuffix(ph.Path, " | json")
			return fmt.Errorf("placeholder %s stands inside a JSON string, where | json adds a second pair of quotes: "+
				"write {{%s}} there (escaped for the string), or {{%s}} without the quotes around it", text, bare, ph.Path)
		case !inString && !json:
			return fmt.Errorf("placeholder %s stands outside a JSON string, where its text would be read as JSON "+
				"(a value could break the body or change its shape): put it inside quotes, \"{{%s}}\", or make it a "+
				"JSON literal, {{%s | json}}", text, ph.Path, ph.Path)
		}
	}
	return nil
}
