package triggers

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hookd/hookd/engine"
)

// EventIndex finds the hooks whose event pattern and payload filters match
// an event. It implements engine.EventIndex. Patterns without a wildcard
// are kept in a map by event type and the others in a trie of segments, so
// that matching costs time in the number of segments of the event type, not
// in the number of hooks. An EventIndex is not safe for concurrent use.
type EventIndex struct {
	hooks map[string]*entry  // every registration, by hook name
	exact map[string]*bucket // patterns without a wildcard, by event type
	root  node               // patterns with a wildcard
}

var _ engine.EventIndex = (*EventIndex)(nil)

// entry is one hook's registration.
type entry struct {
	hook    string
	pattern string
	where   []cond
	in      *bucket // the bucket that holds it
	at      int     // its position in in.entries
}

// bucket holds the registrations of one exact pattern or trie position, in
// no particular order.
type bucket struct {
	entries []*entry
}

func (b *bucket) add(e *entry) {
	e.in, e.at = b, len(b.entries)
	b.entries = append(b.entries, e)
}

func (b *bucket) remove(e *entry) {
	last := len(b.entries) - 1
	b.entries[e.at] = b.entries[last]
	b.entries[e.at].at = e.at
	b.entries[last] = nil
	b.entries = b.entries[:last]
	e.in = nil
}

// node is a position in the trie of wildcard patterns, after some segments.
type node struct {
	next map[string]*node // literal next segment
	any  *node            // "*" as the next segment
	end  bucket           // patterns that end here
	rest bucket           // patterns that end here with "**"
}

func (n *node) empty() bool {
	return len(n.next) == 0 && n.any == nil && len(n.end.entries) == 0 && len(n.rest.entries) == 0
}

// NewEventIndex returns an empty index. The zero EventIndex is empty too.
func NewEventIndex() *EventIndex { return new(EventIndex) }

// Add registers hook's pattern and payload filters, replacing any earlier
// registration of hook. A bad pattern or filter is an error, and leaves an
// earlier registration in place.
func (x *EventIndex) Add(hook, pattern string, where map[string]any) error {
	if hook == "" {
		return errors.New("add event trigger: empty hook name")
	}
	if err := ValidatePattern(pattern); err != nil {
		return err
	}
	conds, err := compileWhere(where)
	if err != nil {
		return fmt.Errorf("where: %w", err)
	}
	x.Remove(hook)
	if x.hooks == nil {
		x.hooks = make(map[string]*entry)
		x.exact = make(map[string]*bucket)
	}
	e := &entry{hook: hook, pattern: pattern, where: conds}
	x.hooks[hook] = e
	if !wildcard(pattern) {
		b := x.exact[pattern]
		if b == nil {
			b = new(bucket)
			x.exact[pattern] = b
		}
		b.add(e)
		return nil
	}
	n := &x.root
	for seg, rest, more := cut(pattern); ; seg, rest, more = cut(rest) {
		if seg == anySegments {
			n.rest.add(e)
			return nil
		}
		var next *node
		if seg == anySegment {
			if n.any == nil {
				n.any = new(node)
			}
			next = n.any
		} else {
			if n.next == nil {
				n.next = make(map[string]*node)
			}
			if next = n.next[seg]; next == nil {
				next = new(node)
				n.next[seg] = next
			}
		}
		n = next
		if !more {
			n.end.add(e)
			return nil
		}
	}
}

// Remove drops hook's registration, if any.
func (x *EventIndex) Remove(hook string) {
	e := x.hooks[hook]
	if e == nil {
		return
	}
	delete(x.hooks, hook)
	e.in.remove(e)
	if !wildcard(e.pattern) {
		if b := x.exact[e.pattern]; len(b.entries) == 0 {
			delete(x.exact, e.pattern)
		}
		return
	}
	prune(&x.root, e.pattern)
}

// prune drops the trie nodes along pattern that hold nothing any more. It
// reports whether n itself is empty.
func prune(n *node, pattern string) bool {
	seg, rest, more := cut(pattern)
	if seg != anySegments {
		child := n.any
		if seg != anySegment {
			child = n.next[seg]
		}
		if child != nil && (!more || prune(child, rest)) && child.empty() {
			if seg == anySegment {
				n.any = nil
			} else {
				delete(n.next, seg)
			}
		}
	}
	return n.empty()
}

// Match appends to dst the hooks that ev matches, sorted by name, and
// returns it. It does not allocate unless dst must grow.
func (x *EventIndex) Match(dst []string, ev *engine.Event) []string {
	if ev == nil {
		return dst
	}
	return x.collect(dst, ev.Type, ev.Data, true)
}

// Listeners appends to dst the hooks whose pattern matches the event type
// typ, whatever their payload filters, sorted by name, and returns it.
func (x *EventIndex) Listeners(dst []string, typ string) []string {
	return x.collect(dst, typ, nil, false)
}

// Accepts reports whether hook's payload filters accept data: true for a
// hook that has none, or none registered.
func (x *EventIndex) Accepts(hook string, data map[string]any) bool {
	e := x.hooks[hook]
	return e == nil || matchWhere(e.where, data)
}

// Patterns returns the distinct patterns registered, sorted.
func (x *EventIndex) Patterns() []string {
	out := make([]string, 0, len(x.hooks))
	for _, e := range x.hooks {
		out = append(out, e.pattern)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// collect appends the hooks whose pattern matches typ and, with filter,
// whose payload filters data satisfies, sorted by name.
func (x *EventIndex) collect(dst []string, typ string, data map[string]any, filter bool) []string {
	if typ == "" {
		return dst
	}
	n := len(dst)
	if b := x.exact[typ]; b != nil {
		dst = b.match(dst, data, filter)
	}
	dst = x.root.match(dst, typ, data, filter)
	if len(dst)-n > 1 {
		slices.Sort(dst[n:])
	}
	return dst
}

// match appends the hooks of patterns at or below n that match typ, the
// rest of the event type (at least one segment).
func (n *node) match(dst []string, typ string, data map[string]any, filter bool) []string {
	dst = n.rest.match(dst, data, filter)
	seg, rest, more := cut(typ)
	if child := n.next[seg]; child != nil {
		dst = child.matchNext(dst, rest, more, data, filter)
	}
	if n.any != nil {
		dst = n.any.matchNext(dst, rest, more, data, filter)
	}
	return dst
}

func (n *node) matchNext(dst []string, rest string, more bool, data map[string]any, filter bool) []string {
	if more {
		return n.match(dst, rest, data, filter)
	}
	return n.end.match(dst, data, filter)
}

// match appends the hooks in b whose filters data satisfies (every hook
// in b without filter).
func (b *bucket) match(dst []string, data map[string]any, filter bool) []string {
	for _, e := range b.entries {
		if !filter || matchWhere(e.where, data) {
			dst = append(dst, e.hook)
		}
	}
	return dst
}

// cut splits the first segment off s.
func cut(s string) (seg, rest string, more bool) { return strings.Cut(s, ".") }
