//go:build !linux

package pgtest

import "os"

// clusterParent is the directory the cluster's directory is made in.
func clusterParent() string { return os.TempDir() }
