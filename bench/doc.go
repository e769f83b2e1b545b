// Package bench holds hookd's comparison benchmarks: the ones that measure
// hookd against another program (supercronic's crontab parse, as a library
// and as a command). It is a module of its own, so that hookd's go.mod
// requires only what hookd and its tests use; supercronic and its logger
// are required here. Run them from this directory:
//
//	cd bench
//	go test -run '^$' -bench 'BenchmarkLoadHookFiles$' -benchtime 3x -count 3 .
//	SUPERCRONIC=/path/to/supercronic go test -run '^$' -bench 'BenchmarkValidateCommand$' -benchtime 5x .
//
// `go test ./...` and `go vet ./...` at the repository's root do not
// descend into it.
package bench
