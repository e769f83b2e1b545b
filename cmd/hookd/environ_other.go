//go:build !linux

package main

// hideEnviron does nothing here: only Linux has PR_SET_DUMPABLE.
func hideEnviron() error { return nil }
