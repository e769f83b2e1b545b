package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestConcurrentRuns records runs from many goroutines at once, with
// readers alongside and a second DB (a CLI process, say) writing the same
// file: no call may fail with "database is locked".
func TestConcurrentRuns(t *testing.T) {
	ctx := context.Background()
	d, path := openTest(t)
	other, err := Open(path)
	mustRun(t, err)
	defer other.Close()

	const workers, perWorker = 50, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker+100)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hook := fmt.Sprintf("hook%d", w%10)
			for i := range perWorker {
				r := &engine.Run{
					ID:        fmt.Sprintf("w%02d-%02d", w, i),
					Hook:      hook,
					Trigger:   "schedule",
					Slot:      t0.Add(time.Duration(w*perWorker+i) * time.Minute),
					StartedAt: t0,
				}
				if err := d.StartRun(ctx, r); err != nil {
					errs <- err
					return
				}
				r.Status, r.FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
				r.Tokens = engine.Tokens{Prompt: 1, Completion: 2, Known: true}
				if err := d.FinishRun(ctx, r); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := d.ListRuns(ctx, engine.RunFilter{Hook: "hook3"}); err != nil {
				errs <- err
				return
			}
			if _, err := d.HookStates(ctx); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer readers.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if err := other.SetPaused(ctx, "cli", i%2 == 0); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	runs, err := d.ListRuns(ctx, engine.RunFilter{Status: engine.StatusCompleted, Limit: 10000})
	mustRun(t, err)
	if len(runs) != workers*perWorker {
		t.Errorf("%d completed runs, want %d", len(runs), workers*perWorker)
	}
}

// TestConcurrentSlotClaim races many runs for one slot: exactly one wins.
func TestConcurrentSlotClaim(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	const n = 20
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		won    int
		failed []error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := d.StartRun(ctx, &engine.Run{ID: fmt.Sprint(i), Hook: "h", Slot: t0, StartedAt: t0})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case !isSlotTaken(err):
				failed = append(failed, err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || len(failed) > 0 {
		t.Errorf("%d runs claimed the slot (want 1); other errors: %v", won, failed)
	}
}
