package config

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseHook checks that no input panics the loader.
func FuzzParseHook(f *testing.F) {
	for _, dir := range []string{"valid", "invalid"} {
		for _, path := range hookFiles(f, dir) {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data, filepath.Ext(path) == ".json")
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, json bool) {
		name := "fuzz.yaml"
		if json {
			name = "fuzz.json"
		}
		h, err := ParseHook(bytes.NewReader(data), name, Options{Root: "/project", DefaultName: "fuzz"})
		if (h == nil) == (err == nil) {
			t.Fatalf("hook %v with error %v", h, err)
		}
		_, _ = LoadDaemon(bytes.NewReader(data), name)
	})
}
