package testtool

import (
	"os"
	"testing"
)

// LongEnv names the variable that, set to 1, runs the long tests in full:
// the soaks, the kill-and-restart loops at their full count, the whole
// containment battery and the OpenTelemetry Collector. CI sets it
// (.ci/run); without it `go test -race ./...` keeps its time budget,
// running a smaller count of each loop and skipping what has no smaller
// form, with a message naming the variable.
const LongEnv = "HOOKD_TEST_LONG"

// Long reports whether LongEnv is set to 1.
func Long() bool { return os.Getenv(LongEnv) == "1" }

// NeedLong skips t, saying what it does (why it is long) and naming
// LongEnv, unless LongEnv is set to 1.
func NeedLong(t testing.TB, what string) {
	t.Helper()
	if !Long() {
		t.Skipf("%s: a long test, run with %s=1 (as CI does)", what, LongEnv)
	}
}

// Count is n, or full under LongEnv: how many times a test that repeats
// something (kills, restarts, rounds) does it. The default suite still
// shows the behaviour, a few times; CI shows it the full number of times.
func Count(n, full int) int {
	if Long() {
		return full
	}
	return n
}
