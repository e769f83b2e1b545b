// Package human reads and writes durations the way people write them in
// hook files, and shows durations and sizes to people.
//
// Duration (elapsed times, run and step lengths), Relative ("in 5m",
// "3h ago"), Size (1.5 KiB) and Exact (a configured duration as written:
// 10m, 1h30s) are the one formatter of each: the CLI, the API's text and
// the dashboard use them.
//
// ParseAge is the one parser of ages and look-backs ("30d", "12h",
// "1d12h"): retention's max_age and memory_search's since use it.
package human
