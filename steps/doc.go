// Package steps provides hookd's context-gathering step kinds. Each kind
// lives in its own file and registers itself with engine.RegisterStep in
// an init function; cmd/hookd imports the package for that effect.
//
// # Kinds
//
// Every kind declares its result fields (engine.DeclaredKind); besides
// them every result has output, error, name and type. A placeholder
// naming a field its step's kind does not have is refused at load.
// exit_code, status_code, count, timed_out and truncated are typed fields
// of engine.StepResult (ExitCode, StatusCode, Count, TimedOut, Truncated),
// which the engine decides on (failures, skip_llm_if_*) and the CLI shows;
// a kind sets those there and its other fields in StepResult.Fields.
// duration_ms is the engine's timing of the step (StepResult.Duration), on
// its clock: a kind does not measure it.
//
// Every kind has the common step keys (name, timeout, required and the
// skip_llm_if_* conditions). A step's result always has every field listed
// for its kind, also when the step fails; the first field named is the
// primary output ({{step_N}}). Fields that are lists hold plain values or
// objects, so placeholders can walk into them ({{steps.x.files.0.path}}).
// Values in string fields may hold placeholders unless said otherwise; the
// hook is refused at load time when one does not parse.
//
// shell runs a command and reports its stdout (the primary output,
// {{step_N}}), stderr, exit_code, timed_out, truncated, duration_ms and
// command (as written). Fields:
//
//	command:    a string, run by /bin/sh -c, or a list of strings, run
//	            as argv without a shell
//	workdir:    a directory relative to the hook's workdir; it must stay
//	            inside it, also once symbolic links are resolved
//	env:        extra environment variables; values may hold placeholders
//	max_output: bytes kept of stdout and of stderr each (default 64 KiB);
//	            past it the head and the tail are kept around a marker
//
// The step's timeout (default 5m) kills the command's whole process group.
// A non-zero exit is a result, not an error; a command that cannot start,
// a placeholder that does not resolve, a workdir that escapes and a
// timeout are errors.
//
// read_file reads one text file: content (primary), path (relative to the
// hook's workdir, or absolute in an extra root), size (of the whole file),
// lines (in content), truncated, binary. Fields:
//
//	path:      relative to the hook's workdir, or absolute inside a root
//	max_lines: lines kept (default: no limit)
//	max_bytes: bytes kept (default 64 KiB); a cut never splits a character
//	tail:      keep the end of the file instead of its start (logs)
//	roots:     extra directories the step may read, relative to the
//	           workdir or absolute; fixed in the file (no placeholders)
//
// When truncated, content carries a "[hookd: truncated: ...]" line saying
// what it holds. A file with a NUL byte in its first 8000 bytes is binary:
// content is a one-line note instead. A directory, a FIFO or device, a
// missing file and a path outside the roots are errors.
//
// http makes one request: body (primary), status_code, status, headers (an
// object; repeated headers joined with ", "), url (the final one, after
// redirects, without a password), method, truncated, duration_ms. Any
// answer is a result; one with a status of 400 or more fails a run as a
// command's non-zero exit does (see docs/hooks.md, "When a step fails
// the run"). Fields:
//
//	url:           http:// or https://, written out; the rest may hold
//	               placeholders, percent-encoded for where they stand
//	               (a path segment or a query value)
//	method:        default GET
//	headers:       name: value; values may hold placeholders and must not
//	               contain control characters once expanded
//	body:          the request body (text; with a JSON Content-Type, bare
//	               placeholders are JSON-escaped)
//	json:          instead of body, a YAML structure encoded as the JSON
//	               body (Content-Type application/json unless given);
//	               string leaves are rendered and sent as JSON strings
//	max_body:      bytes of the response kept (default 256 KiB); past it a
//	               "[hookd: body truncated ...]" line ends the body
//	allow_private: allow loopback and private addresses (never link-local)
//	max_redirects: redirects followed (default 5; 0 returns the 3xx)
//
// The timeout (default 30s) bounds the whole exchange. A 4xx or 5xx
// answer is a result; an address refused by the network guard, a failed
// connection and a timeout are errors. The guard (GuardedClient) checks
// the address of every connection just before it is made, after name
// resolution, so a name that resolves to an internal address and every
// redirect hop are caught; proxies from the environment are not used. It
// refuses loopback, private (RFC 1918, fc00::/7), link-local, CGNAT
// (100.64/10), unspecified, multicast, reserved and documentation ranges,
// and IPv4 addresses embedded in IPv6 that fall there, unless
// allow_private is set; the cloud metadata addresses (169.254.169.254,
// fd00:ec2::254, 168.63.129.16, 100.100.100.200) and all of link-local
// (169.254.0.0/16, where ECS serves task credentials at 169.254.170.2, and
// fe80::/10) are refused even then.
//
// git_diff shows what a branch changed since it left its base, the diff of
// base_branch...head: diff (primary), files (changed paths, relative to
// the repository's top), count, truncated, base, head, exit_code (git's,
// 0; -1 when the step failed). file_diff shows how one path in the working tree
// differs from HEAD (staged or not; against the empty tree before the
// first commit); untracked files are shown whole, as added: diff
// (primary), path, files (relative to the workspace), count, truncated,
// untracked (the diff includes untracked files), exit_code (0; -1 when
// the step failed). git_log lists the commits since the hook's last run,
// newest first, without merges: log (primary: one line per commit with
// the files it touched), commits (objects with hash, author, date,
// subject, files), files (every path touched, once, relative to the
// repository's top), count (commits),
// truncated, since. Fields they share:
//
//	workspace:  the repository's directory, relative to the hook's
//	            workdir and inside it (default: the workdir)
//	max_output: bytes of diff or log kept (default 64 KiB), head and tail
//	            around a marker
//	max_files:  paths listed in files (default 1000)
//
// and of their own:
//
//	git_diff  base_branch: default main; head: default HEAD
//	file_diff path:        relative to the workspace; required
//	git_log   since:       a duration before now (24h), an RFC 3339 time or
//	                       a date; default the hook's last run (all commits
//	                       on the first run)
//	          max_count:   commits listed (default 50)
//	          rev:         where to start (default HEAD)
//	          paths:       only commits touching these paths
//
// Git runs without a shell, pager, prompt or colour, under the step's
// timeout (default 1m); revisions that start with '-' or hold '..' or
// spaces are refused, and paths are literal (--literal-pathspecs), so
// event data cannot become an option, a range or a glob. A revision that
// is not a commit, a workspace that is not a repository and a path that
// is neither in git nor on disk are errors; no changes is an empty diff
// with count 0.
//
// list_files lists the files of a directory: files (objects with path,
// size and mtime in RFC 3339), count, truncated, path; the primary output
// is the paths, one per line, also as content; directory is path
// (agent-queue's names for both). Paths are relative to the hook's workdir.
// Fields:
//
//	path:       the directory (default .); confined like read_file's
//	recursive:  descend into subdirectories (default false)
//	extensions: keep files ending in one of these (md or .md; any case)
//	include:    keep files matching one of these globs
//	ignore:     drop files and whole directories matching these globs
//	max_files:  files listed (default 1000); truncated says there were more
//	hidden:     list dot files and enter dot directories (default false)
//	roots:      extra directories, as for read_file
//
// Globs are matched against paths relative to path, gitignore-style
// (glob.CompilePath): '*', '?' and [...] within a segment, "**" for any
// number of segments (one or more at the end), a pattern without a slash
// matches a name at any depth, a trailing slash matches directories only,
// and a pattern that matches a directory matches everything in it. Only regular files are listed, and links to
// regular files inside the roots; other links are left out.
//
// run_tests runs a test command like shell (command, workdir, env,
// max_output, with the same placeholder rules) with stderr merged into
// stdout, and reads the output as it arrives, so failures past max_output
// are still found: output (primary), passed, failures (names, at most
// max_failures), failure_count, test_count, passed_count, skipped_count,
// framework, exit_code, timed_out, truncated, duration_ms, command, and
// agent-queue's stdout (the output) and stderr (always empty: it is merged
// into stdout). Fields of its own:
//
//	framework:    auto (default), go, pytest, jest (also vitest) or cargo
//	max_failures: failure names kept (default 50)
//
// passed is true when the command exited 0 and the output names no
// failure. go test is read plain, with -v and with -json; failures are
// named package.Test/subtest (the failing leaves only), and a package that
// failed without a failing test (a build error, a panic) by its path and
// the reason. pytest failures are the node ids of FAILED and ERROR lines;
// jest and vitest ones the "●" and "FAIL ... >" titles; cargo ones the
// test paths, and "could not compile ..." for a build error. auto picks
// the parser that recognised the most (a summary line beats test lines);
// when none did, framework is unknown. The timeout defaults to 10m.
//
// db_query reads hookd's own records, or a SQLite file: rows (a list of
// objects), columns, count, truncated; the primary output is rows as
// JSON. Fields:
//
//	query:    a named query over hookd's records:
//	          recent_runs (params: status), failed_runs (params: hook),
//	          runs_of_hook (params: hook, required; status), recent_events
//	          (params: type), hook_activity (runs per hook by status over
//	          the last limit runs, with last_status and last_run)
//	limit:    records a named query reads (default 20; hook_activity 200)
//	sql:      a query against db; it must not hold placeholders
//	db:       the SQLite file, confined like read_file's path; hookd's own
//	          database is refused (by file identity: links too)
//	params:   values bound to the SQL's parameters, never spliced into it:
//	          a list for ?, a mapping for :name; for a named query, its
//	          parameters. A value that is exactly one placeholder is bound
//	          with its type (number, boolean, null; objects as JSON text)
//	max_rows: rows kept (default 100); truncated says there were more
//	roots:    extra directories db may be in
//
// Run rows have id, hook, status, trigger, reason, error, event_type,
// queued_at, started_at, finished_at and duration_ms; event rows seq, id,
// type, source, time, depth and data. The SQLite file is opened read-only
// (mode=ro, query_only), on one connection with ATTACH disabled and an
// authorizer that allows only SELECT, reading, functions and the pragmas
// that describe a schema: any write, transaction, ATTACH or other pragma
// is refused ("only reading is allowed"). Blobs that are not UTF-8 come
// back as "base64:..." text. The timeout defaults to 30s.
//
// emit publishes an event as the run, so hooks can chain without a model:
// the event is stored, then matched against event triggers one level
// deeper in the event chain. Result: event_type, runs (ids of the runs it
// triggered, whatever their outcome), count, data; the primary output is a
// line saying so. Fields:
//
//	event_type: dot-separated segments of letters, digits, '_', '-', ':',
//	            none empty; may hold placeholders (checked once expanded)
//	data:       the payload; every string inside may hold placeholders. A
//	            string that is exactly one placeholder takes the value
//	            with its type (a number, an object, ...)
//
// No hook listening is a result with count 0.
//
// # Confinement
//
// Roots (NewRoots, Confine) is the one place that decides whether a path
// may be touched: inside the hook's workdir or an extra root, both as
// written and with links resolved; Roots.Open opens through os.Root so a
// file swapped for a link after the check cannot lead out; ResolveNew is
// for files about to be written. The model's tools use it too, and
// package netguard, which keeps the http step off non-public addresses.
//
// # Placeholders in shell commands
//
// The shell step's commands are checked when the hook loads, and their
// placeholders bound when it runs, by package shellcheck: a
// placeholder's value never becomes shell code.
//
// # Running processes
//
// Steps run commands through process.Command, which the tools and
// handlers share: in the hook's sandbox, in a process group of its own, a
// timeout that kills the whole tree, bounded output capture and a result
// that tells an exit status from a failure to run.
package steps
