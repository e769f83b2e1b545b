package engine_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestBrokenFilesStayListed: a hook file that no longer loads stays in
// the hooks' listing and the summary with its error until it loads
// again: as a row of its own when no version of its hook runs, and on
// its hook's row, naming the version that runs meanwhile, when a reload
// kept the previous one. Without SetBroken the hook whose file broke
// vanishes from the listing (as it did from hookd list).
func TestBrokenFilesStayListed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ok := version(every(newHook("ok"), time.Hour), "v1")
		ok.Source.File = "hooks.d/ok.yaml"
		kept := version(every(newHook("kept"), time.Hour), "v1")
		kept.Source.File = "hooks.d/kept.yaml"
		gone := version(every(newHook("gone"), time.Hour), "v1")
		gone.Source.File = "hooks.d/gone.yaml"
		h := newHarness(t, []*engine.Hook{ok, kept, gone})
		defer h.stop()

		// gone.yaml and kept.yaml broke; the reload kept kept's previous
		// version (as hookd's reloader does), gone.yaml never loaded.
		h.reload(ok, kept)
		if _, listed := h.status("gone"); listed {
			t.Fatal("gone is listed without SetBroken")
		}
		broken := []engine.BrokenFile{
			{File: "hooks.d/kept.yaml", Hook: "kept", Errors: []string{"hooks.d/kept.yaml:3: trigger.evrey: unknown field; did you mean every?"}},
			{File: "hooks.d/gone.yaml", Hook: "gone", Errors: []string{
				`hooks.d/gone.yaml:4: tools[0]: unknown tool "raed_file"; did you mean read_file?`,
				"hooks.d/gone.yaml:6: env.TOKEN: ...",
			}},
		}
		if err := h.eng.SetBroken(ctx, broken); err != nil {
			t.Fatal(err)
		}
		broken[0].Errors[0] = "changed by the caller" // the engine keeps its own copy

		st, listed := h.status("gone")
		if !listed || st.Broken == nil || st.File != "hooks.d/gone.yaml" || st.Broken.Previous != "" || len(st.Broken.Errors) != 2 {
			t.Fatalf("gone: listed %v, %+v", listed, st)
		}
		if !st.NextDue.IsZero() || st.Trigger != "" {
			t.Errorf("gone is not scheduled, yet its row says %+v", st)
		}
		if want := `file error: hooks.d/gone.yaml:4: tools[0]: unknown tool "raed_file"; did you mean read_file? (and 1 more)`; st.Broken.String() != want {
			t.Errorf("gone says %q\nwant %q", st.Broken.String(), want)
		}
		st, _ = h.status("kept")
		if st.Broken == nil || st.Broken.Previous != "v1" || st.NextDue.IsZero() {
			t.Fatalf("kept: %+v", st)
		}
		if want := "previous version (v1) kept on schedule, each trigger skipped (invalid_file); file error: hooks.d/kept.yaml:3: trigger.evrey: unknown field; did you mean every?"; st.Broken.String() != want {
			t.Errorf("kept says %q\nwant %q", st.Broken.String(), want)
		}
		if st, _ := h.status("ok"); st.Broken != nil {
			t.Errorf("ok is not broken: %+v", st.Broken)
		}
		sum, err := h.eng.Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Broken) != 2 || sum.Broken[0].File != "hooks.d/gone.yaml" || sum.Broken[1].Previous != "v1" {
			t.Errorf("summary: %+v", sum.Broken)
		}

		// Fixed: the files load again, and nothing is broken.
		h.reload(ok, version(kept, "v2"), gone)
		if err := h.eng.SetBroken(ctx, nil); err != nil {
			t.Fatal(err)
		}
		sum, _ = h.eng.Summary(ctx)
		hs, _ := h.eng.Hooks(ctx)
		if len(sum.Broken) != 0 || len(hs) != 3 {
			t.Errorf("after the fix: summary %+v, hooks %+v", sum.Broken, hs)
		}
		for _, s := range hs {
			if s.Broken != nil {
				t.Errorf("%s still broken", s.Name)
			}
		}
	})
}
