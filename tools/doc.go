// Package tools holds hookd's built-in LLM tools. Each registers itself
// with engine.RegisterTool in init; a hook offers the model only those it
// lists under tools:.
//
//	read_file    read a file inside the hook's workdir
//	list_files   list a directory inside the workdir
//	write_file   create, replace or append to a file in the hook's
//	             write_roots (never hookd's own paths or tool configuration)
//	run_command  run a program (argv, no shell) in the workdir, with a
//	             timeout and an output cap
//	http_get     fetch a public http(s) URL (private, loopback and cloud
//	             metadata addresses are refused)
//	emit_event   publish an event of a type the hook lists (Hook.EmitTypes),
//	             with the source tool:HOOK
//	fire_hook    fire a hook the hook lists (Hook.FireHooks) through the
//	             gates, with the trigger tool:HOOK (engine.FromTool)
//	list_runs    list recent runs      } the hook's own, and those of the
//	get_run      read one run record   } hooks its file names (Hook.RunHooks,
//	search_runs  search finished runs  } Hook.MayReadRunsOf)
//
// No tool can create or edit hooks. read_file and write_file open every
// directory through one os.Root at the workdir without following a
// symbolic link (openDirs), check that the file opened is the one
// checked (openChecked), and refuse a link and a file with more than one
// hard link. list_files resolves paths with steps.Roots, so ".." and
// symbolic links cannot lead outside the workdir. One guard (protect.go)
// decides what may be written and what may be read: reads are refused for
// hookd's own files (token, settings, state, database) and credential
// stores, a subset of what writes are refused for.
package tools
