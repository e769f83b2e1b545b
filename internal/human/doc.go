// Package human reads and writes durations the way people write them in
// hook files, and (in Duration and Size) the way hookd shows measured
// durations and sizes to people.
//
// ParseAge is the one parser of ages and look-backs ("30d", "12h",
// "1d12h"): retention's max_age and memory_search's since use it.
package human
