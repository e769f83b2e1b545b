// Package triggers provides what fires hooks on their own: the every and
// cron schedules, which it registers with the engine in an init function
// (import it for that effect), and the event index, which matches events
// against the hooks' event patterns and payload filters.
//
// # Intervals
//
// An every trigger fires at the slots origin + k*every, where the origin is
// the Unix epoch, not the time hookd started: a restart or a reload never
// shifts the slots, and every hook with the same interval fires at the same
// instants. Intervals are elapsed time, so time zones and daylight saving
// time do not affect them: "every: 1h" fires on the hour in UTC (and so at
// half past in a zone with a half-hour offset), "every: 24h" at midnight UTC.
// For a time of day, use cron.
//
// # Cron
//
// A cron trigger uses the syntax of robfig/cron: five fields (minute, hour,
// day of month, month, day of week), or six with a leading seconds field,
// or a descriptor (@yearly, @monthly, @weekly, @daily, @hourly). @every is
// refused; use an every trigger. The expression is evaluated in the time
// zone given by a CRON_TZ=Zone (or TZ=Zone) prefix or by the trigger's
// timezone field (both may be given only if they agree), and in the local
// time zone of the host otherwise, as cron does. The zone is stored in the
// trigger's Location. A schedule that has no slot within five years (such
// as "0 0 30 2 *") never fires: Next returns the zero time.
//
// Cron slots are wall-clock times, and each fires at most once. When the
// clock jumps forward (spring), slots in the skipped range fire once, at
// the first instant after the jump; several of them collapse into that one
// firing, together with a slot at that instant. In Europe/Berlin on
// 2026-03-29, "30 2 * * *" and "*/15 2 * * *" both fire once at 03:00 CEST,
// and "0 * * * *" fires at 01:00 and 03:00. When the clock goes back
// (autumn), a slot in the repeated range fires at its first occurrence only:
// on 2026-10-25, "30 2 * * *" fires at 02:30 CEST and not at 02:30 CET, and
// "*/30 * * * *" fires at 02:00 and 02:30 CEST, then next at 03:00 CET. This
// is what ISC cron does for jobs at fixed times.
//
// # Event patterns
//
// An event type is a dot-separated list of segments, such as deploy.failed
// or hook.run.completed. A pattern is too, and its segments are literals of
// ASCII letters, digits, '_', '-' and ':', which match the same segment; "*",
// which matches any one segment; or "**", only as the last segment, which
// matches one or more remaining segments. So deploy.* matches deploy.failed
// but neither deploy nor deploy.prod.failed; deploy.** matches the latter
// two but not deploy; *.failed matches deploy.failed; ** matches everything.
//
// # Payload filters
//
// A where filter maps dotted paths into the event's payload to wanted
// values; an event must satisfy every entry. A path follows nested objects
// (and lists, by a decimal index). A scalar value must equal the payload
// value: strings and booleans exactly, numbers numerically (so 3 matches
// 3.0), null only null. A list of scalars matches when any one of them does.
// A path that is missing from the payload never matches, and a payload
// object or list never equals a scalar.
//
// # Matching
//
// EventIndex keeps patterns without a wildcard in a map by event type and
// the others in a trie of segments, so matching an event costs time in the
// number of its segments, not in the number of hooks, and allocates nothing
// but the growth of the result. Matching hooks come out sorted by name,
// each once.
//
// # File watches
//
// Watcher watches the paths of the hooks with a watch trigger with one
// fsnotify instance, folder by folder (a file is watched through its
// folder), adding folders as they appear in a recursive tree. Each watch
// collects changes in a window until it has been quiet for its debounce
// (or max_wait after the first change), then fires its hook through
// WatchTarget (the engine) with a file.changed or folder.changed event.
// In a window each path counts once: its state when the window first saw
// it is compared with its state when the window closes, so created then
// modified is created, created then deleted is nothing, modified then
// deleted is deleted, and an editor's save through a temporary file is a
// modification; a rename (fsnotify's Rename of the old name followed by
// Create of the new one) is reported with both names. include and ignore
// are gitignore-style patterns relative to each watched folder; .git/ is
// always ignored. On an inotify queue overflow the watched folders are
// compared with the watcher's snapshot of them; when inotify's limits are
// reached a watch polls instead, as it does with poll: true.
// scan_on_start compares the files with a snapshot kept through
// engine.WatchSnapshots.
package triggers
