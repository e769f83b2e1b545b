package process

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// copyBufs holds the buffers a command's output is copied with: without
// them each run would make a 32 KB buffer for stdout and another for
// stderr (two thirds of what a run of `true` allocated).
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// outputPipes are the pipes a Command's stdout and stderr go through: one
// for both with MergeOutput, so that they interleave as written.
type outputPipes struct {
	outR, outW *os.File
	errR, errW *os.File // with MergeOutput errR is nil and errW is outW
}

func newOutputPipes(merge bool) (*outputPipes, error) {
	p := &outputPipes{}
	var err error
	if p.outR, p.outW, err = outputPipe(); err != nil {
		return nil, fmt.Errorf("make the output pipe: %w", err)
	}
	if merge {
		p.errW = p.outW
		return p, nil
	}
	if p.errR, p.errW, err = outputPipe(); err != nil {
		_, _ = p.outR.Close(), p.outW.Close()
		return nil, fmt.Errorf("make the error pipe: %w", err)
	}
	return p, nil
}

// outputPipe makes one pipe: its read end non-blocking and registered
// with the poller, as a drain reads it with a deadline; its write end, the
// command's, blocking and not registered. os.Pipe registers both ends, and
// starting the command then sets the write end blocking again (O_NONBLOCK
// belongs to the open file description the child shares) and closing it
// deregisters it: six system calls a pipe for an end hookd never reads.
// os.NewFile leaves a blocking descriptor out of the poller.
func outputPipe() (r, w *os.File, err error) {
	var fds [2]int
	if err := pipeCloexec(&fds); err != nil {
		return nil, nil, err
	}
	// A fresh pipe's status flags are its access mode alone, which F_SETFL
	// ignores: setting O_NONBLOCK needs no F_GETFL first.
	if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETFL, unix.O_NONBLOCK); err != nil {
		_, _ = unix.Close(fds[0]), unix.Close(fds[1])
		return nil, nil, fmt.Errorf("set the read end non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}

// closeWriteEnds closes Run's copies of the write ends, once the command
// holds its own (or failed to start): the pipes end when the command and
// whatever inherited them close theirs.
func (p *outputPipes) closeWriteEnds() {
	_ = p.outW.Close()
	if p.errW != p.outW {
		_ = p.errW.Close()
	}
}

func (p *outputPipes) closeReadEnds() {
	_ = p.outR.Close()
	if p.errR != nil {
		_ = p.errR.Close()
	}
}

// drain starts copying stdout's pipe into out and stderr's into errOut.
func (p *outputPipes) drain(out, errOut io.Writer) []*drain {
	ds := []*drain{startDrain(p.outR, out)}
	if p.errR != nil {
		ds = append(ds, startDrain(p.errR, errOut))
	}
	return ds
}

// drain copies one output pipe into a writer, from one goroutine, until
// every write end is closed or until it is cut.
type drain struct {
	f    *os.File
	w    io.Writer
	done chan struct{}
	open bool // when cut, the pipe was still held open; set before done closes
}

func startDrain(f *os.File, w io.Writer) *drain {
	d := &drain{f: f, w: w, done: make(chan struct{})}
	go d.run()
	return d
}

func (d *drain) run() {
	defer close(d.done)
	defer d.f.Close()
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, err := d.f.Read(buf)
		if n > 0 {
			_, _ = d.w.Write(buf[:n])
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			d.open = d.rest(buf)
			return
		default: // io.EOF: every write end is closed
			return
		}
	}
}

// rest reads, once the drain is cut, what is in the pipe at that moment,
// without waiting for more: all the command wrote before it exited is
// there. It reports whether the pipe is still held open (a background
// process has it, or writes to it).
func (d *drain) rest(buf []byte) (open bool) {
	rc, err := d.f.SyscallConn()
	if err != nil {
		return true
	}
	cerr := rc.Control(func(fd uintptr) {
		left, err := unix.IoctlGetInt(int(fd), fionread)
		if err != nil {
			open = true
			return
		}
		for {
			// The fd is non-blocking: an empty pipe answers EAGAIN.
			n, err := unix.Read(int(fd), buf[:min(max(left, 1), len(buf))])
			if n > 0 {
				_, _ = d.w.Write(buf[:n])
			}
			switch {
			case n == 0 && err == nil:
				return // the end: nothing holds the pipe any more
			case n <= 0, left <= 0:
				// Empty and held open (EAGAIN), or more than was there
				// at the cut: a background process writes to it.
				open = true
				return
			}
			left -= n
		}
	})
	return open || cerr != nil
}

// waitDrains waits until the drains reach the end of their pipes, at most
// grace: then each reads what is in its pipe and stops. It reports whether
// a pipe was still held open.
func waitDrains(ds []*drain, grace time.Duration) bool {
	t := time.NewTimer(grace)
	defer t.Stop()
	for _, d := range ds {
		select {
		case <-d.done:
		case <-t.C:
			for _, d := range ds {
				_ = d.f.SetReadDeadline(time.Now()) // closed already when done: no matter
			}
			<-d.done
		}
	}
	open := false
	for _, d := range ds {
		open = open || d.open
	}
	return open
}
