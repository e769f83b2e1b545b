//go:build !linux

package config

import (
	"bytes"
	"io"
	"os"
)

// readFileInto reads the file name into buf (reusing its storage) and
// returns the contents, stopping past maxFileSize bytes.
func readFileInto(name string, buf []byte) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	b := bytes.NewBuffer(buf[:0])
	_, err = b.ReadFrom(io.LimitReader(f, maxFileSize+1))
	return b.Bytes(), err
}
