// Package procjournal keeps hookd's record of the process groups its live
// steps lead in a small file of the state directory, so that a hookd
// started after a crash of this one can kill what the dead one left
// running (engine.ProcJournal).
//
// The record has to outlive the hookd process, not the machine: after a
// reboot every process group is gone, and a record of another boot is
// never acted on (process.ReapGroup compares boot ids). So it needs no
// database commit and no fsync: a group is recorded with one pwrite(2)
// into a fixed-size slot of the file, and its slot is cleared with
// another when the step is done with the group. A kill of hookd, even
// SIGKILL, does not undo a completed write(2) (the data is in the page
// cache, which the kernel writes back whatever becomes of the writer); a
// power loss or kernel crash loses it, and also ends every group it
// named.
//
// The file holds one slot per group live at once (a freed slot is reused),
// so its size is bounded by the number of concurrently running commands.
// A slot carries a format tag and a CRC-32C of its content: zeros, a torn
// write, garbage or a slot of another format read as empty, never as a
// group to kill. Only the holder of hookd's daemon lock opens the file,
// and it takes an flock of its own on it as well.
package procjournal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"syscall"

	"github.com/hookd/hookd/engine"
)

// Slot layout, little endian:
//
//	[0:4]   tag "hkp" and format version 1
//	[4:8]   CRC-32C of [8:SlotSize]
//	[8:12]  pgid (uint32)
//	[12:16] step (int32; -1 for a tool of the model stage)
//	[16:24] leader start, first tick (engine.ProcGroup.Start)
//	[24:32] leader start, last tick (engine.ProcGroup.StartEnd; 0: exactly Start)
//	[32]    length of the boot id, then the boot id ([33:80])
//	[80]    length of the run id, then the run id ([81:128])
const (
	SlotSize = 128
	maxText  = 47
	// maxSlots bounds what Open reads of a file: more would be more live
	// commands than any hookd runs at once (the rest is not a journal).
	maxSlots = 1 << 16
)

var (
	tag        = [4]byte{'h', 'k', 'p', 1}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// Entry is one recorded group, with the run whose step leads it.
type Entry struct {
	Run   string
	Group engine.ProcGroup
}

// encode writes e into slot b (SlotSize bytes).
func encode(b []byte, run string, g engine.ProcGroup) error {
	if len(run) == 0 || len(run) > maxText {
		return fmt.Errorf("record process group %d: run id %q does not fit a journal slot", g.PGID, run)
	}
	if len(g.Boot) > maxText {
		return fmt.Errorf("record process group %d: boot id %q does not fit a journal slot", g.PGID, g.Boot)
	}
	if g.PGID <= 1 || g.PGID > 1<<31-1 {
		return fmt.Errorf("record process group %d: not a group a step leads", g.PGID)
	}
	clear(b[:SlotSize])
	copy(b[0:4], tag[:])
	binary.LittleEndian.PutUint32(b[8:12], uint32(g.PGID))
	binary.LittleEndian.PutUint32(b[12:16], uint32(int32(g.Step)))
	binary.LittleEndian.PutUint64(b[16:24], g.Start)
	binary.LittleEndian.PutUint64(b[24:32], g.StartEnd)
	b[32] = byte(len(g.Boot))
	copy(b[33:80], g.Boot)
	b[80] = byte(len(run))
	copy(b[81:128], run)
	binary.LittleEndian.PutUint32(b[4:8], crcOf(b))
	return nil
}

// crcOf is the checksum of slot b's content.
func crcOf(b []byte) uint32 { return crc32.Checksum(b[8:SlotSize], castagnoli) }

// decode reads slot b; ok is false for an empty slot and for anything
// that is not a whole slot of this format (torn, garbage, another version).
func decode(b []byte) (e Entry, ok bool) {
	if len(b) < SlotSize || [4]byte(b[0:4]) != tag ||
		binary.LittleEndian.Uint32(b[4:8]) != crcOf(b) {
		return Entry{}, false
	}
	bootLen, runLen := int(b[32]), int(b[80])
	if bootLen > maxText || runLen == 0 || runLen > maxText {
		return Entry{}, false
	}
	g := engine.ProcGroup{
		PGID:     int(binary.LittleEndian.Uint32(b[8:12])),
		Step:     int(int32(binary.LittleEndian.Uint32(b[12:16]))),
		Start:    binary.LittleEndian.Uint64(b[16:24]),
		StartEnd: binary.LittleEndian.Uint64(b[24:32]),
		Boot:     string(b[33 : 33+bootLen]),
	}
	if g.PGID <= 1 || g.PGID > 1<<31-1 {
		return Entry{}, false
	}
	return Entry{Run: string(b[81 : 81+runLen]), Group: g}, true
}

// Journal is the open file. Track and the done functions it returns may be
// called from any goroutine; mu serializes them (a slot's write is a copy
// of 128 bytes into the page cache).
type Journal struct {
	path string
	fd   int

	mu     sync.Mutex
	free   []int64 // slots free to reuse, lowest last
	next   int64   // slots [0, next) are in use or free; the file ends there or before
	live   int     // slots in use
	old    int64   // slots [0, old) may hold what the previous holder left, until Reset
	prev   map[string][]engine.ProcGroup
	closed bool
}

var _ engine.ProcJournal = (*Journal)(nil)

// Open opens (creating it, mode 0600) the journal at path and reads what
// the previous holder left in it. It fails when another process holds the
// file: two hookd processes must not share a state directory.
func Open(path string) (*Journal, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open process journal: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	j := &Journal{path: path, fd: fd}
	if err := j.load(); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return j, nil
}

func (j *Journal) load() error {
	var st syscall.Stat_t
	if err := syscall.Fstat(j.fd, &st); err != nil {
		return fmt.Errorf("open process journal %s: %w", j.path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fmt.Errorf("open process journal %s: not a regular file", j.path)
	}
	// Whoever else can write the file can make hookd kill a process
	// group of their choosing at its next start: a file of another user
	// (who can chmod it back at will) or one writable by others (who may
	// hold it open) is refused, not made private.
	if euid := uint32(os.Geteuid()); st.Uid != euid {
		return fmt.Errorf("open process journal %s: owned by uid %d, not by hookd's user (uid %d); remove it", j.path, st.Uid, euid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("open process journal %s: writable by other users (mode %#o); remove it", j.path, st.Mode&0o777)
	}
	if st.Mode&0o077 != 0 {
		if err := syscall.Fchmod(j.fd, 0o600); err != nil {
			return fmt.Errorf("open process journal %s: make it private: %w", j.path, err)
		}
	}
	if err := syscall.Flock(j.fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("open process journal %s: another hookd holds it (one state directory per hookd)", j.path)
		}
		return fmt.Errorf("open process journal %s: lock: %w", j.path, err)
	}
	n := min(st.Size/SlotSize, maxSlots)
	buf := make([]byte, n*SlotSize)
	for off := 0; off < len(buf); {
		m, err := syscall.Pread(j.fd, buf[off:], int64(off))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("read process journal %s: %w", j.path, err)
		}
		if m == 0 {
			buf = buf[:off]
			break
		}
		off += m
	}
	j.prev = map[string][]engine.ProcGroup{}
	for i := 0; i+SlotSize <= len(buf); i += SlotSize {
		if e, ok := decode(buf[i : i+SlotSize]); ok {
			j.prev[e.Run] = append(j.prev[e.Run], e.Group)
		}
	}
	// New slots go after the old ones until Reset: a crash before then
	// leaves the old records where the next start reads them again.
	j.old = st.Size / SlotSize
	if st.Size%SlotSize != 0 {
		j.old++
	}
	j.next = j.old
	return nil
}

// Entries reads the groups recorded in the journal at path, without
// taking it (to look at a live hookd's file: tests, debugging). Slots
// that do not decode are left out, as Open leaves them.
func Entries(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read process journal: %w", err)
	}
	var out []Entry
	for i := 0; i+SlotSize <= len(b) && i < maxSlots*SlotSize; i += SlotSize {
		if e, ok := decode(b[i : i+SlotSize]); ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// Path is the journal's file.
func (j *Journal) Path() string { return j.path }

// Recorded returns what the previous holder of the file left recorded:
// the groups of the steps that were running when it stopped, by run id.
func (j *Journal) Recorded() map[string][]engine.ProcGroup {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make(map[string][]engine.ProcGroup, len(j.prev))
	for id, gs := range j.prev {
		out[id] = append([]engine.ProcGroup(nil), gs...)
	}
	return out
}

// Reset forgets what the previous holder recorded (the engine calls it
// once it has killed what it had to), emptying the file when no group is
// recorded now.
func (j *Journal) Reset() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return fmt.Errorf("reset process journal %s: closed", j.path)
	}
	j.prev = map[string][]engine.ProcGroup{}
	if j.old == 0 {
		return nil
	}
	if j.live == 0 {
		if err := ftruncate(j.fd, 0); err != nil {
			return fmt.Errorf("reset process journal %s: %w", j.path, err)
		}
		j.free, j.next, j.old = j.free[:0], 0, 0
		return nil
	}
	// Groups are recorded after the old slots: clear those and free them.
	if err := pwrite(j.fd, make([]byte, j.old*SlotSize), 0); err != nil {
		return fmt.Errorf("reset process journal %s: %w", j.path, err)
	}
	for i := j.old - 1; i >= 0; i-- {
		j.free = append(j.free, i)
	}
	j.old = 0
	return nil
}

// Track records that a step of run leads group g, with one pwrite into a
// free slot, and returns the function that clears the slot, to be called
// once the group has ended (or was killed).
func (j *Journal) Track(run string, g engine.ProcGroup) (done func(), err error) {
	var b [SlotSize]byte
	if err := encode(b[:], run, g); err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, fmt.Errorf("record process group %d: journal %s closed", g.PGID, j.path)
	}
	var slot int64
	if n := len(j.free); n > 0 {
		slot, j.free = j.free[n-1], j.free[:n-1]
	} else {
		slot = j.next
		j.next++
	}
	// The write is made holding mu (a page-cache copy of 128 bytes), so
	// that Close cannot close the file under it.
	if err := pwrite(j.fd, b[:], slot*SlotSize); err != nil {
		j.release(slot)
		return nil, fmt.Errorf("record process group %d in %s: %w", g.PGID, j.path, err)
	}
	j.live++
	var once sync.Once
	return func() {
		once.Do(func() {
			j.mu.Lock()
			defer j.mu.Unlock()
			j.live--
			if j.closed {
				return // the record stays for the next start, which finds the group gone
			}
			var zero [SlotSize]byte
			// A slot that cannot be cleared stays named; the next start
			// finds its run not interrupted, or its group gone.
			_ = pwrite(j.fd, zero[:], slot*SlotSize)
			j.release(slot)
		})
	}, nil
}

// release returns slot to the free list, keeping the lowest slots in use
// so that the file stays as long as the most groups live at once.
// j.mu is held.
func (j *Journal) release(slot int64) {
	// Keep free sorted, lowest last, so Track takes the lowest slot.
	i := len(j.free)
	j.free = append(j.free, slot)
	for i > 0 && j.free[i-1] < slot {
		j.free[i] = j.free[i-1]
		i--
	}
	j.free[i] = slot
}

// Close closes the file (and so releases its lock). Records of groups
// still live stay in it for the next start.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	return syscall.Close(j.fd)
}

func pwrite(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := syscall.Pwrite(fd, b, off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

func ftruncate(fd int, size int64) error {
	for {
		if err := syscall.Ftruncate(fd, size); err != syscall.EINTR {
			return err
		}
	}
}
