package testtool

import (
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CanaryDir makes a directory a contained process must not write: in the
// package's directory, absolute, outside /tmp (which a contained process
// may see replaced by its private one, so a canary there would pass a
// test vacuously). It is removed when t ends.
func CanaryDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(".", ".canary-")
	if err != nil {
		t.Fatal(err)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TCPCanary listens on loopback and counts the connections it accepts.
type TCPCanary struct {
	Addr *net.TCPAddr
	n    atomic.Int64
}

// NewTCPCanary starts a canary that stops when t ends.
func NewTCPCanary(t testing.TB) *TCPCanary {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c := &TCPCanary{Addr: ln.Addr().(*net.TCPAddr)}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
			c.n.Add(1)
		}
	}()
	return c
}

// Count is how many connections were accepted so far.
func (c *TCPCanary) Count() int { return int(c.n.Load()) }

// More waits a while for a connection past before (one still in the
// backlog is accepted within the wait) and reports whether one came.
func (c *TCPCanary) More(before int) bool {
	deadline := time.Now().Add(500 * time.Millisecond)
	for c.Count() == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return c.Count() > before
}
