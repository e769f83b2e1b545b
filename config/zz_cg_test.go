package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/internal/benchhooks"
)

func TestZZCallgrind(t *testing.T) {
	dir := os.Getenv("ZZDIR")
	if dir == "" {
		t.Skip()
	}
	if _, err := os.Stat(filepath.Join(dir, "hook-00000.yaml")); err != nil {
		if err := benchhooks.WriteDir(dir, 2000); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		hs, errs := config.LoadDir(dir, config.Options{})
		if len(errs) > 0 || len(hs) != 2000 {
			t.Fatal(errs)
		}
	}
}
