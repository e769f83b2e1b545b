package engine

import "context"

// Run goroutines are kept for the next run. A run's goroutine goes deep
// (the store's commit, the step's fork/exec, the model client): a fresh
// goroutine grows its stack, copying it, two or three times in every
// run. A goroutine that ran a run has its stack grown already, so the
// loop hands the next run to one waiting for work (go them) and starts a
// new one only when none waits. At most MaxConcurrent wait; they end
// when the loop does.

// runJob is a run handed to a run goroutine: what execute takes.
type runJob struct {
	ctx context.Context
	ent *entry
	h   *Hook
	act *active
}

// goExecute runs execute(j) on a waiting run goroutine, or on a new one.
// Called on the loop, after runs.Add.
func (e *Engine) goExecute(j runJob) {
	select {
	case e.jobs <- j:
	default:
		go e.runWorker(j)
	}
}

// runWorker executes j, then the runs handed to it, until the loop ends
// or MaxConcurrent others wait already.
func (e *Engine) runWorker(j runJob) {
	for {
		e.execute(j.ctx, j.ent, j.h, j.act)
		j = runJob{} // hold nothing of the run while waiting
		if e.idleWorkers.Add(1) > e.maxConcurrent.Load() {
			e.idleWorkers.Add(-1)
			return
		}
		select {
		case j = <-e.jobs:
			e.idleWorkers.Add(-1)
		case <-e.loopDone:
			e.idleWorkers.Add(-1)
			return
		}
	}
}
