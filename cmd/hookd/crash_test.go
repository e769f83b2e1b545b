package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/store/postgres/postgrestest"
)

// The periodic hook's first run outlives the daemon (sleep 30); every
// later run is quick. The step writes its pid so the test can end it.
const crashTick = `description: periodic; the first run outlives the daemon
trigger:
  every: 1s
steps:
  - type: shell
    command: '[ -f first.done ] || { touch first.done; sleep 0.5; echo $$ > first.pid; sleep 30; }'
skip_llm: true
`

const crashOther = `description: fired by hand; waits in the queue behind the periodic run
steps:
  - type: shell
    command: echo other ran
skip_llm: true
`

// TestCrashRecovery kills the daemon with SIGKILL while a periodic run is
// in flight and a fired run waits in the queue, then restarts it on the
// same database: the killed run is recorded interrupted, the queued run
// is not lost, and no schedule slot fires twice.
func TestCrashRecovery(t *testing.T) { testCrashRecovery(t, "") }

// TestCrashRecoveryOnPostgres is TestCrashRecovery with the store in
// PostgreSQL (database: in hookd.yaml).
func TestCrashRecoveryOnPostgres(t *testing.T) {
	testCrashRecovery(t, "database: "+postgrestest.NewDatabase(t)+"\n")
}

func testCrashRecovery(t *testing.T, settings string) {
	e := newDaemonProcEnv(t, settings+"max_concurrent: 1\n", map[string]string{
		"tick.yaml":  crashTick,
		"other.yaml": crashOther,
	})
	d := e.serve()

	// The periodic run is running and its step is asleep.
	var killed string
	waitFor(t, "the periodic run to be running", func() bool {
		runs := e.listRuns("tick", "--status", "running")
		if len(runs) == 1 {
			killed = runs[0].ID
		}
		return killed != "" && pidIn(e, "first.pid") > 0
	}, func() string { return d.log.String() })

	// A manual fire must wait for the one concurrency slot.
	r := e.must(0, "fire", "other")
	queued := runID(t, r)
	if !strings.Contains(r.stderr, "queued:") {
		t.Errorf("fire of a run that waits for a slot should say it is queued:\n%s", r)
	}
	if got := e.getRun(queued); got.Status != engine.StatusQueued {
		t.Fatalf("run %s: status %s, want queued", queued, got.Status)
	}

	// Let the schedule go on a little while the run is in flight: those
	// slots are recorded skipped (in_flight), each with its slot.
	waitFor(t, "a slot skipped while the run is in flight", func() bool {
		for _, r := range e.listRuns("tick", "--status", "skipped") {
			if strings.HasPrefix(r.Reason, "in_flight") && !r.Slot.IsZero() {
				return true
			}
		}
		return false
	}, func() string { return d.log.String() })

	d.signal(syscall.SIGKILL)
	if code := d.wait(); code != -1 {
		t.Fatalf("hookd serve killed by SIGKILL: exit code %d", code)
	}
	// The killed run's step outlives the daemon (its own process group).
	orphan := pidIn(e, "first.pid")
	if testtool.ProcessGone(orphan) {
		t.Fatalf("the step's process %d died with the daemon; the test cannot see it reaped", orphan)
	}

	// The killed run is still "running" in the store until a daemon starts.
	if got := e.getRun(killed); got.Status != engine.StatusRunning {
		t.Errorf("before restart: run %s is %s, want running", killed, got.Status)
	}

	// The next start kills what the dead daemon's steps left running
	// before it runs anything, and says so in the interrupted run.
	if url, ok := strings.CutPrefix(strings.SplitN(settings, "\n", 2)[0], "database: "); ok {
		waitUnlocked(t, url) // the server ends the killed daemon's session a moment later
	}
	d2 := e.serve()
	if !testtool.ProcessGone(orphan) {
		t.Errorf("the orphaned step process %d still runs after the restart", orphan)
	}
	got := e.getRun(killed)
	if got.Status != engine.StatusInterrupted {
		t.Errorf("after restart: run %s is %s (%s), want interrupted", killed, got.Status, got.Reason)
	}
	if want := "killed 2 process(es) its steps had left running: "; !strings.Contains(got.Reason, want) ||
		!strings.Contains(got.Reason, strconv.Itoa(orphan)+" (sh)") || !strings.Contains(got.Reason, "(sleep)") {
		t.Errorf("interrupted run's reason %q does not name the processes killed (%d (sh) and its sleep)", got.Reason, orphan)
	}
	if got.FinishedAt.IsZero() {
		t.Errorf("interrupted run %s has no finish time", killed)
	}
	d2.waitLog("run interrupted by a previous stop")

	// The queued run survived the crash and runs.
	run := e.waitRun(queued, engine.StatusCompleted)
	if len(run.Steps) != 1 || !strings.Contains(run.Steps[0].Output, "other ran") {
		t.Errorf("queued run %s: steps %+v, want the output of its step", queued, run.Steps)
	}

	// The schedule goes on after the restart: two quick runs of tick.
	waitFor(t, "periodic runs after the restart", func() bool {
		return len(e.listRuns("tick", "--status", "completed")) >= 2
	}, func() string { return d2.log.String() })

	d2.signal(syscall.SIGTERM)
	if code := d2.wait(); code != 0 {
		t.Fatalf("hookd serve after SIGTERM: exit %d; log:\n%s", code, d2.log)
	}

	// Every slot appears at most once among the records, whatever they say.
	all := e.listRuns("--limit", "1000")
	slots := map[string][]string{}
	interrupted := 0
	for _, r := range all {
		// None runs; one may be queued still: a clean stop leaves the
		// queue to the next start (TestSIGTERMGraceful), and a slot that
		// came while a run held the one concurrency slot is queued.
		switch r.Status {
		case engine.StatusRunning:
			t.Errorf("after a clean stop, run %s of %s is still %s", r.ID, r.Hook, r.Status)
		case engine.StatusInterrupted:
			interrupted++
		}
		if !r.Slot.IsZero() {
			k := r.Hook + " " + r.Slot.UTC().Format(time.RFC3339Nano)
			slots[k] = append(slots[k], r.ID+" "+string(r.Status)+" "+r.Reason)
		}
	}
	t.Logf("%d records, %d slots", len(all), len(slots))
	if interrupted != 1 {
		t.Errorf("%d interrupted runs, want 1 (the killed one)", interrupted)
	}
	if len(slots) < 3 {
		t.Errorf("only %d slots recorded; the test did not exercise the schedule", len(slots))
	}
	for slot, runs := range slots {
		if len(runs) > 1 {
			t.Errorf("slot %s fired %d times:\n  %s", slot, len(runs), strings.Join(runs, "\n  "))
		}
	}
}

// pidIn returns the pid written in the test directory's file, or 0.
func pidIn(e *env, name string) int {
	b, err := os.ReadFile(e.path(name))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// TestCrashRecoveryQueuedSlot kills the daemon while a periodic run waits
// in the queue for the one concurrency slot (held by a manual run): after
// the restart the queued run keeps its slot and runs, the missed slots are
// caught up, and no slot fires twice.
func TestCrashRecoveryQueuedSlot(t *testing.T) {
	e := newDaemonProcEnv(t, "max_concurrent: 1\n", map[string]string{
		"blocker.yaml": `description: holds the one concurrency slot
steps:
  - type: shell
    command: echo $$ > blocker.pid; sleep 30
skip_llm: true
`,
		"tick.yaml": `trigger:
  every: 1s
  on_missed: all
steps:
  - type: shell
    command: echo tick
skip_llm: true
`,
	})
	d := e.serve()
	blocker := runID(t, e.must(0, "fire", "blocker"))

	// A slot of tick fires while blocker runs: it is queued, with its slot.
	var queued *engine.Run
	waitFor(t, "a periodic run queued behind the blocker", func() bool {
		for _, r := range e.listRuns("tick", "--status", "queued") {
			if !r.Slot.IsZero() {
				queued = r
				return true
			}
		}
		return false
	}, func() string { return d.log.String() })
	// And a later slot is refused while it waits.
	waitFor(t, "a later slot skipped", func() bool {
		return len(e.listRuns("tick", "--status", "skipped")) > 0
	}, func() string { return d.log.String() })

	d.signal(syscall.SIGKILL)
	d.wait()
	e.killSteps()

	d2 := e.serve()
	if got := e.getRun(blocker); got.Status != engine.StatusInterrupted {
		t.Errorf("blocker run %s is %s, want interrupted", blocker, got.Status)
	}
	run := e.waitRun(queued.ID, engine.StatusCompleted)
	if !run.Slot.Equal(queued.Slot) {
		t.Errorf("queued run %s: slot %s after the restart, was %s", run.ID, run.Slot, queued.Slot)
	}
	waitFor(t, "periodic runs after the restart", func() bool {
		return len(e.listRuns("tick", "--status", "completed", "--limit", "1000")) >= 3
	}, func() string { return d2.log.String() })
	d2.signal(syscall.SIGTERM)
	if code := d2.wait(); code != 0 {
		t.Fatalf("exit %d after SIGTERM; log:\n%s", code, d2.log)
	}

	slots := map[string][]string{}
	for _, r := range e.listRuns("--limit", "1000") {
		if !r.Slot.IsZero() {
			k := r.Hook + " " + r.Slot.UTC().Format(time.RFC3339Nano)
			slots[k] = append(slots[k], r.ID+" "+string(r.Status)+" "+r.Trigger+" "+r.Reason)
		}
	}
	for slot, runs := range slots {
		if len(runs) > 1 {
			t.Errorf("slot %s fired %d times:\n  %s", slot, len(runs), strings.Join(runs, "\n  "))
		}
	}
}

// TestInterruptedRerun: a hook with on_interrupted: rerun whose run was
// in flight when the daemon was killed runs again, once, at the next
// start, with the same event; a hook without it is left interrupted.
func TestInterruptedRerun(t *testing.T) {
	const body = `trigger:
  event: job.start
steps:
  - type: shell
    command: 'echo "{{event.n}}" >> %[1]s.log; [ -f %[1]s.once ] || { touch %[1]s.once; echo $$ > %[1]s.pid; sleep 30; }'
skip_llm: true
`
	e := newDaemonProcEnv(t, "", map[string]string{
		"again.yaml": "on_interrupted: rerun\n" + fmt.Sprintf(body, "again"),
		"left.yaml":  fmt.Sprintf(body, "left"),
	})
	d := e.serve()
	e.must(0, "emit", "job.start", "n=7")
	waitFor(t, "both steps asleep", func() bool { return pidIn(e, "again.pid") > 0 && pidIn(e, "left.pid") > 0 },
		func() string { return d.log.String() })
	first := e.listRuns("again")[0]
	d.signal(syscall.SIGKILL)
	d.wait()

	d2 := e.serve()
	var rerun *engine.Run
	waitFor(t, "the rerun to complete", func() bool {
		for _, r := range e.listRuns("again") {
			if r.Trigger == "rerun" && r.Status == engine.StatusCompleted {
				rerun = r
			}
		}
		return rerun != nil
	}, func() string { return d2.log.String() })
	if got := e.getRun(first.ID); got.Status != engine.StatusInterrupted {
		t.Errorf("the first run is %s, want interrupted", got.Status)
	}
	if string(rerun.Event) != string(first.Event) || rerun.EventType != "job.start" {
		t.Errorf("rerun event %s %s, want the interrupted run's %s", rerun.EventType, rerun.Event, first.Event)
	}
	if len(rerun.Notes) != 1 || !strings.Contains(rerun.Notes[0], "re-runs run "+first.ID) {
		t.Errorf("rerun notes %q, want one naming run %s", rerun.Notes, first.ID)
	}
	if b, _ := os.ReadFile(e.path("again.log")); string(b) != "7\n7\n" {
		t.Errorf("again.log = %q, want the step run twice with n=7", b)
	}
	d2.signal(syscall.SIGTERM)
	d2.wait()
	for _, r := range e.listRuns("left") {
		if r.Status != engine.StatusInterrupted {
			t.Errorf("hook without on_interrupted: run %s is %s (%s), want only the interrupted run", r.ID, r.Status, r.Trigger)
		}
	}
	if b, _ := os.ReadFile(e.path("left.log")); string(b) != "7\n" {
		t.Errorf("left.log = %q, want the step run once", b)
	}
}

// The hooks of TestCrashLoop. Each step first appends a line to side.log
// (a file the daemon knows nothing of): the periodic ones "SLOT hook slot
// run", the event one "EVENT run payload". The periodic steps outlast
// their 1s interval, so slots meet a run in flight under every overlap
// policy; tick-queue's outlasts two, so a slot merges into its pending run.
var crashLoopHooks = map[string]string{
	"tick-skip.yaml": `trigger: {every: 1s}
overlap: skip
steps:
  - type: shell
    command: 'echo "SLOT tick-skip {{event.slot}} {{run}}" >> side.log; sleep 1.3'
skip_llm: true
`,
	"tick-queue.yaml": `trigger: {every: 1s}
overlap: queue
steps:
  - type: shell
    command: 'echo "SLOT tick-queue {{event.slot}} {{run}}" >> side.log; sleep 2.5'
skip_llm: true
`,
	"tick-cancel.yaml": `trigger: {every: 1s}
overlap: cancel_previous
steps:
  - type: shell
    command: 'echo "SLOT tick-cancel {{event.slot}} {{run}}" >> side.log; sleep 1.3'
skip_llm: true
`,
	"events.yaml": `trigger: {event: crash.ev}
overlap: queue
on_interrupted: rerun
steps:
  - type: shell
    command: 'echo "EVENT {{run}} {{event}}" >> side.log; sleep 0.2'
skip_llm: true
`,
}

// TestCrashLoop SIGKILLs a real `hookd serve` at random moments, 20 times
// (6 without HOOKD_TEST_LONG=1), while periodic hooks of every overlap policy fire each second and events
// are emitted, then lets a last daemon finish. From the steps' own side
// log, not the database: no slot ran in two runs, and every event that
// `hookd emit` accepted reached a run's step (an event whose run and its
// one rerun were both interrupted before the step began is excused, as
// documented, but only when the database shows exactly that).
func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the daemon 20 times")
	}
	kills := testtool.Count(6, 20)
	e := newDaemonProcEnv(t, "max_concurrent: 3\n", crashLoopHooks)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	t.Logf("seed %d", seed)

	// Events are emitted only while a daemon serves: with none, `hookd
	// emit` runs the hooks in-process and holds the lock a starting
	// daemon needs. em.mu orders emits with kills and restarts.
	em := startEmitter(func(n int) (result, error) { return e.exec("emit", "crash.ev", fmt.Sprintf("e%d=1", n)) })
	em.mu.Lock()
	d := e.serve()
	em.mu.Unlock()
	for i := range kills {
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		em.mu.Lock()
		d.signal(syscall.SIGKILL)
		d.wait()
		d = e.serve()
		em.mu.Unlock()
		t.Logf("kill %d done", i+1)
	}
	accepted := em.end()

	// The last daemon dispatches the events a killed one stored and did
	// not dispatch, runs what is queued and what the event hook has to
	// re-run, then stops cleanly once every event is dispatched and no
	// event run waits or runs.
	var pending []string
	waitFor(t, "the events to be dispatched and the event hook to be idle", func() bool {
		pending = pendingEvents(e, "crash.ev")
		if len(pending) > 0 {
			return false
		}
		for _, r := range e.listRuns("events", "--limit", "1000") {
			if !r.Status.Final() {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("events not dispatched: %v\n%s", pending, d.log) })
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("the last daemon exited %d after SIGTERM; log:\n%s", code, d.log)
	}

	side, err := os.ReadFile(e.path("side.log"))
	if err != nil {
		t.Fatal(err)
	}
	slotRuns := map[string]map[string]bool{} // "hook slot" -> run ids
	seen := map[int]bool{}
	eventKey := regexp.MustCompile(`\be(\d+)\b`)
	var slotLines, eventLines int
	for _, line := range strings.Split(strings.TrimSpace(string(side)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[0] == "SLOT":
			slotLines++
			if f[2] == "" || !strings.Contains(f[2], "T") {
				t.Errorf("side log line without a slot: %q", line)
			}
			k := f[1] + " " + f[2]
			if slotRuns[k] == nil {
				slotRuns[k] = map[string]bool{}
			}
			slotRuns[k][f[3]] = true
		case len(f) >= 2 && f[0] == "EVENT":
			eventLines++
			for _, m := range eventKey.FindAllStringSubmatch(line, -1) {
				n, _ := strconv.Atoi(m[1])
				seen[n] = true
			}
		default:
			t.Errorf("unexpected side log line %q", line)
		}
	}
	for k, runs := range slotRuns {
		if len(runs) > 1 {
			t.Errorf("slot %s ran in %d runs: %v", k, len(runs), runs)
		}
	}

	// An accepted event missing from the side log must have had its run
	// and that run's rerun interrupted.
	runs := e.listRuns("events", "--limit", "10000")
	lost, excused := checkReached(t, accepted, seen, runs)
	if lost > 0 {
		t.Logf("what hookd shows of the events and the event hook's runs:\n%s\n%s\nside log:\n%s",
			e.must(0, "events", "--type", "crash.ev", "--limit", "10000"), e.must(0, "runs", "events", "--limit", "10000"), side)
	}
	var interrupted, reruns int
	for _, r := range runs {
		if r.Status == engine.StatusInterrupted {
			interrupted++
		}
		if r.Trigger == "rerun" {
			reruns++
		}
	}
	t.Logf("%d kills: %d slot lines over %d slots, %d events accepted (%d lost, %d excused), %d event lines, %d event runs interrupted, %d reruns",
		kills, slotLines, len(slotRuns), len(accepted), lost, excused, eventLines, interrupted, reruns)
	if len(slotRuns) < 3*kills/2 || len(accepted) < kills {
		t.Errorf("too little happened to tell: %d slots ran, %d events accepted", len(slotRuns), len(accepted))
	}
}

// pendingEvents returns the ids of the events of type typ that are
// stored and not dispatched yet (no fate recorded: `hookd events`).
func pendingEvents(e *env, typ string) []string {
	e.t.Helper()
	r := e.must(0, "events", "--type", typ, "--limit", "10000", "--json")
	var evs []api.Event
	if err := json.Unmarshal([]byte(r.stdout), &evs); err != nil {
		e.t.Fatalf("decode events: %v\n%s", err, r)
	}
	var ids []string
	for _, ev := range evs {
		if ev.Fate == nil {
			ids = append(ids, ev.ID)
		}
	}
	return ids
}

// rng2 spreads the emitter's pauses without sharing the test's generator
// across goroutines.
func rng2(n int) int { return (n*7919 + 13) % 97 }

// emitter posts events crash.ev with e<n>=1 through post (a `hookd
// emit`), one every 20 to 100 ms until end; a test holds mu to order the
// posts with its kills and restarts. accepted lists the n of the posts
// hookd accepted (exit 0).
type emitter struct {
	mu       sync.Mutex
	accepted []int
	stop     chan struct{}
	done     chan struct{}
}

func startEmitter(post func(n int) (result, error)) *emitter {
	em := &emitter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(em.done)
		for n := 0; ; n++ {
			select {
			case <-em.stop:
				return
			case <-time.After(time.Duration(20+rng2(n)%80) * time.Millisecond):
			}
			em.mu.Lock()
			if r, err := post(n); err == nil && r.code == 0 {
				em.accepted = append(em.accepted, n)
			}
			em.mu.Unlock()
		}
	}()
	return em
}

// checkReached fails the test for an accepted event (e<n>) that no step
// saw, unless the event hook's runs show a rerun of it interrupted (its
// run and that one rerun were both interrupted); it returns how many were
// lost and how many excused.
func checkReached(t *testing.T, accepted []int, seen map[int]bool, runs []*engine.Run) (lost, excused int) {
	t.Helper()
	interruptedRerun := func(n int) bool {
		key := fmt.Sprintf(`"e%d"`, n)
		for _, r := range runs {
			if r.Status == engine.StatusInterrupted && r.Trigger == engine.TriggerRerun && strings.Contains(string(r.Event), key) {
				return true
			}
		}
		return false
	}
	for _, n := range accepted {
		switch {
		case seen[n]:
		case interruptedRerun(n):
			excused++
		default:
			lost++
			t.Errorf("event e%d was accepted but no step saw it", n)
		}
	}
	return lost, excused
}

// count is how many posts were accepted so far.
func (em *emitter) count() int {
	em.mu.Lock()
	defer em.mu.Unlock()
	return len(em.accepted)
}

// end stops the posts and returns the accepted ones.
func (em *emitter) end() []int {
	close(em.stop)
	<-em.done
	return em.accepted
}
