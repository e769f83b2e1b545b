// Package glob is hookd's one glob dialect, used by every pattern a hook
// file or hookd.yaml writes: event types (trigger: event), tool names
// (tools:), hook names (a handler's match.hook), file names (the
// list_files tool's pattern) and paths (a watch's and list_files'
// include and ignore).
//
// A name is a list of segments split by a separator, which depends on
// what is named: '.' for event types and tool names (Dot), '/' for paths
// (Slash). Hook names and file names are matched as one segment of the
// Slash domain: they hold no '/', so '*' matches the dots in them.
//
// Within a segment:
//
//   - '*' matches any run of characters, never the separator;
//   - '?' matches one character other than the separator;
//   - '[...]' matches one character of a class, as in path.Match:
//     [abc], [a-z], [^0-9];
//   - '\' makes the next character literal.
//
// "**" as a whole segment matches whole segments: any number of them,
// none included, at the start or in the middle ("**/b" matches b and
// a/b; "a/**/b" matches a/b and a/x/y/b), and one or more at the end
// ("a/**" matches what is inside a, not a itself; deploy.** matches
// deploy.failed and deploy.prod.failed, not deploy). "**" inside a
// segment ("a**") is an error: write '*'.
//
// IsPattern is the one test of whether a string is a pattern at all
// (it holds '*', '?', '[' or '\'), so that a plain name is compared as
// it is, everywhere alike.
//
// Paths (CompilePath) add gitignore's rules for include and ignore lists
// on top: a pattern without a slash but for a trailing one matches at
// any depth, a slash anchors it at the base, a trailing slash matches
// folders only, and a pattern that matches a folder matches everything
// in it.
package glob
