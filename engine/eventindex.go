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
	// Listeners appends to dst the hooks whose pattern matches the event
	// type typ, whatever their payload filters, sorted by name, and
	// returns it.
	Listeners(dst []string, typ string) []string
	// Accepts reports whether hook's payload filters accept data (true
	// for a hook with none). With Listeners, it is what a hook's where:
	// map decides; the engine decides the rest of where: (state.accepts).
	Accepts(hook string, data map[string]any) bool
	// Patterns returns the distinct patterns registered, sorted: what
	// hooks listen to, for an event no hook listens to (NearestTypes).
	Patterns() []string
}
