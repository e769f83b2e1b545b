package procjournal

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
)

const boot = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"

func group(pgid int) engine.ProcGroup {
	return engine.ProcGroup{PGID: pgid, Start: 1000 + uint64(pgid), StartEnd: 1002 + uint64(pgid), Boot: boot, Step: pgid % 3}
}

func open(t *testing.T, path string) *Journal {
	t.Helper()
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestJournalRecordsUntilDone: what is tracked and not done is what the
// next Open finds (a process that stops without ending its groups); what
// is done is gone; Reset empties the file.
func TestJournalRecordsUntilDone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookd.db.procs")
	j := open(t, path)
	if got := j.Recorded(); len(got) != 0 {
		t.Fatalf("new journal: recorded %v", got)
	}
	doneA, err := j.Track("RUNA", group(101))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Track("RUNA", engine.ProcGroup{PGID: 102, Start: 7, Boot: boot, Step: -1}); err != nil {
		t.Fatal(err)
	}
	doneB, err := j.Track("RUNB", group(103))
	if err != nil {
		t.Fatal(err)
	}
	doneB()
	doneB()                                                // twice is once
	if _, err := j.Track("RUNC", group(104)); err != nil { // takes B's slot
		t.Fatal(err)
	}
	doneA()
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", st.Mode().Perm())
	}
	if got := size(t, path); got != 3*SlotSize {
		t.Errorf("journal of 3 groups at most live at once: %d bytes, want %d", got, 3*SlotSize)
	}
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "another hookd holds it") {
		t.Errorf("second Open while held: %v; want refused", err)
	}
	j.Close()

	j2 := open(t, path)
	want := map[string][]engine.ProcGroup{
		"RUNA": {{PGID: 102, Start: 7, Boot: boot, Step: -1}},
		"RUNC": {group(104)},
	}
	got := j2.Recorded()
	if len(got) != len(want) || !slices.Equal(got["RUNA"], want["RUNA"]) || !slices.Equal(got["RUNC"], want["RUNC"]) {
		t.Fatalf("after reopening: recorded %+v; want %+v", got, want)
	}
	// Groups recorded before Reset do not overwrite the old records.
	done, err := j2.Track("RUND", group(105))
	if err != nil {
		t.Fatal(err)
	}
	es, err := Entries(path)
	if err != nil || len(es) != 3 {
		t.Fatalf("before Reset: entries %+v, %v; want the 2 old and the new", es, err)
	}
	if err := j2.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := j2.Recorded(); len(got) != 0 {
		t.Errorf("after Reset: recorded %v", got)
	}
	es, err = Entries(path)
	if err != nil || len(es) != 1 || es[0].Run != "RUND" || es[0].Group != group(105) {
		t.Fatalf("after Reset with one group live: entries %+v, %v; want RUND's alone", es, err)
	}
	done()
	if err := j2.Reset(); err != nil {
		t.Fatal(err)
	}
	j2.Close()
	j3 := open(t, path)
	if err := j3.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := size(t, path); got != 0 {
		t.Errorf("after Reset with nothing live: %d bytes, want 0", got)
	}
}

// TestJournalIgnoresGarbage: garbage, a torn slot, a slot of another
// format, a slot cut short and a checksummed slot naming no group read as
// empty; only whole slots of this format are recorded.
func TestJournalIgnoresGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookd.db.procs")
	slot := func(run string, g engine.ProcGroup) []byte {
		b := make([]byte, SlotSize)
		if err := encode(b, run, g); err != nil {
			t.Fatal(err)
		}
		return b
	}
	var file bytes.Buffer
	file.Write(slot("GOOD", group(4242)))
	file.Write(bytes.Repeat([]byte{0xa5}, SlotSize)) // garbage
	torn := slot("TORN", group(4243))
	clear(torn[SlotSize/2:]) // the second half never written
	file.Write(torn)
	flipped := slot("FLIP", group(4244))
	flipped[20] ^= 1 // one bit of the start time
	file.Write(flipped)
	other := slot("V2", group(4245))
	other[3] = 2 // a later format
	file.Write(other)
	file.Write(make([]byte, SlotSize)) // a cleared slot
	file.Write([]byte("hkp\x01 text that is not a slot"))
	// A slot with a valid checksum naming pgid 1 or no run: never a group.
	for _, bad := range [][]byte{slot("P1", group(4246)), slot("NORUN", group(4247))} {
		file.Write(bad)
	}
	b := file.Bytes()
	pgid1 := b[len(b)-2*SlotSize:]
	pgid1[8], pgid1[9], pgid1[10], pgid1[11] = 1, 0, 0, 0
	fixSum(pgid1)
	norun := b[len(b)-SlotSize:]
	norun[80] = 0
	fixSum(norun)
	file.Write(slot("CUT", group(4248))[:SlotSize-1]) // cut short: the file ends inside it
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	j := open(t, path)
	got := j.Recorded()
	if len(got) != 1 || !slices.Equal(got["GOOD"], []engine.ProcGroup{group(4242)}) {
		t.Errorf("recorded %+v; want GOOD's group alone", got)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v after Open, want 0600", st.Mode().Perm())
	}
	// New groups go after all of it, the slot cut short included.
	if _, err := j.Track("NEW", group(5000)); err != nil {
		t.Fatal(err)
	}
	es, err := Entries(path)
	if err != nil || len(es) != 2 || es[1].Run != "NEW" {
		t.Errorf("entries %+v, %v; want GOOD's and NEW's", es, err)
	}
}

// fixSum sets a slot's checksum to match its content.
func fixSum(b []byte) {
	tmp := make([]byte, SlotSize)
	copy(tmp, b)
	sum := crcOf(tmp)
	b[4], b[5], b[6], b[7] = byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24)
}

// TestJournalBounded: steps tracked from many goroutines at once each get
// a slot of their own, and however many groups come and go, the file
// holds no more slots than were live at once.
func TestJournalBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookd.db.procs")
	j := open(t, path)
	const workers, rounds = 8, 500
	var wg sync.WaitGroup
	hold := make(chan struct{})
	var ready sync.WaitGroup
	ready.Add(workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// First all hold a slot at once...
			done, err := j.Track("HELD", group(10000+w))
			if err != nil {
				t.Error(err)
			}
			ready.Done()
			<-hold
			done()
			// ...then they come and go.
			for i := 0; i < rounds; i++ {
				done, err := j.Track("RUN", group(2+w*rounds+i))
				if err != nil {
					t.Error(err)
					return
				}
				done()
			}
		}()
	}
	ready.Wait()
	es, err := Entries(path)
	if err != nil {
		t.Fatal(err)
	}
	pgids := map[int]bool{}
	for _, e := range es {
		pgids[e.Group.PGID] = true
	}
	if len(es) != workers || len(pgids) != workers {
		t.Errorf("%d groups live at once: %d entries (%d groups) in the journal; want each in its own slot", workers, len(es), len(pgids))
	}
	close(hold)
	wg.Wait()
	if got := size(t, path); got > workers*SlotSize {
		t.Errorf("after %d groups, at most %d live at once: %d bytes, want at most %d", workers*(rounds+1), workers, got, workers*SlotSize)
	}
	if es, _ := Entries(path); len(es) != 0 {
		t.Errorf("every group done: %d entries left", len(es))
	}
}

// TestJournalRefusesWhatDoesNotFit: a run id too long for a slot is an
// error (the engine then records the group in the store), not a cut id.
func TestJournalRefusesWhatDoesNotFit(t *testing.T) {
	j := open(t, filepath.Join(t.TempDir(), "hookd.db.procs"))
	if _, err := j.Track(strings.Repeat("R", 48), group(42)); err == nil {
		t.Error("Track of a 48-character run id succeeded")
	}
	if _, err := j.Track("R", engine.ProcGroup{PGID: 1, Boot: boot}); err == nil {
		t.Error("Track of pgid 1 succeeded")
	}
}

// TestJournalRefusesPlantedFile performs the attacks of a file planted at
// the journal's path before hookd starts: a symbolic link (to a file
// another slot-shaped write would clobber), a FIFO, a directory, a file
// writable by other users and a file of another user, each holding (or
// pointing at) a well-formed slot naming a group. Open refuses each with
// an error naming the path, reads nothing from it, and writes nothing
// through it.
func TestJournalRefusesPlantedFile(t *testing.T) {
	slot := make([]byte, SlotSize)
	if err := encode(slot, "FORGED", group(4242)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, slot, 0o600); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(path string) error{
		"symlink":   func(p string) error { return os.Symlink(victim, p) },
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"directory": func(p string) error { return os.Mkdir(p, 0o700) },
		"world-writable": func(p string) error {
			if err := os.WriteFile(p, slot, 0o600); err != nil {
				return err
			}
			return os.Chmod(p, 0o666)
		},
		"group-writable": func(p string) error {
			if err := os.WriteFile(p, slot, 0o600); err != nil {
				return err
			}
			return os.Chmod(p, 0o620)
		},
	}
	if os.Geteuid() == 0 {
		plant["another user's"] = func(p string) error {
			if err := os.WriteFile(p, slot, 0o600); err != nil {
				return err
			}
			return os.Chown(p, 65534, 65534)
		}
	} else {
		t.Log("not root: the file of another user is not planted")
	}
	for name, mk := range plant {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".procs")
		if err := mk(path); err != nil {
			t.Fatal(err)
		}
		j, err := Open(path)
		if err == nil {
			t.Errorf("%s: Open succeeded, recorded %+v; want it refused", name, j.Recorded())
			j.Close()
			continue
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name %s", name, err, path)
		}
	}
	if b, err := os.ReadFile(victim); err != nil || !bytes.Equal(b, slot) {
		t.Errorf("the symbolic link's target changed: %d bytes, %v", len(b), err)
	}
}
