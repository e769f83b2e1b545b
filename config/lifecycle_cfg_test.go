package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestLoadDaemonLifecycle: lifecycle: POINT: {sequential: true} names the
// void points whose handlers run one at a time; an unknown point, a
// point whose handlers run one at a time already, and an unknown key are
// errors naming the line and field.
func TestLoadDaemonLifecycle(t *testing.T) {
	t.Parallel()
	d, err := LoadDaemon(strings.NewReader("lifecycle:\n  run:after: {sequential: true}\n  step:after: {sequential: false}\n  daemon:start: {sequential: true}\n"), "hookd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := []engine.Point{engine.PointRunAfter, engine.PointDaemonStart}; !slices.Equal(d.Sequential, want) {
		t.Errorf("Sequential = %v, want %v", d.Sequential, want)
	}
	_, err = LoadDaemon(strings.NewReader("lifecycle:\n  run:aftr: {sequential: true}\n  tool:call:before: {sequential: true}\n  run:after: {sequental: true}\n"), "hookd.yaml")
	for _, want := range []string{
		`hookd.yaml:2: lifecycle.run:aftr: unknown lifecycle point "run:aftr" (points: daemon:start, `,
		"hookd.yaml:3: lifecycle.tool:call:before.sequential: tool:call:before is a waterfall point: its handlers run one at a time, by priority, already",
		"hookd.yaml:4: lifecycle.run:after.sequental: unknown field",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}
