// Command testreport reads the output of `go test -json` on its standard
// input and prints what `go test` without -json prints (each package's
// result line and the output of the tests that failed, a package at a
// time), then each package's test time, slowest first. It exits 1 when a
// test or a package failed, or when a test was skipped that the allowlist
// does not name.
//
// CI runs the README's test command through it:
//
//	go test -race -json ./... | go run ./internal/testreport -allow .ci/skip-allowlist
//
// A skip on CI is a test CI does not run, so the allowlist (see
// ParseAllowlist) names only the skips CI cannot avoid.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	allowFile := flag.String("allow", "", "the skip allowlist: one `package TestName reason` a line")
	flag.Parse()
	var allow *Allowlist
	if *allowFile != "" {
		f, err := os.Open(*allowFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		allow, err = ParseAllowlist(f, *allowFile)
		f.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
	}
	if err := Report(os.Stdin, os.Stdout, allow); err != nil {
		fmt.Fprintln(os.Stdout, "testreport:", err)
		os.Exit(1)
	}
}
