package engine

// EventIndex finds the hooks whose event trigger matches an event, in
// memory (never a database scan per event). Package triggers implements it.
// The engine loop is its only user, so implementations need no locking.
type EventIndex interface {
	// Add registers hook's pattern and payload filters, replacing any
	// earlier registration of the same hook. A bad pattern is an error.
	Add(hook, pattern string, where map[string]any) error
	// Remove drops hook's registration.
	Remove(hook string)
	// Match appends to dst the hooks that ev matches and returns it.
	Match(dst []string, ev *Event) []string
}
