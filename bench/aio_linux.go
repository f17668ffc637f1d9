package bench

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's asynchronous reads (io_setup, io_submit, io_getevents: the
// interface fio's libaio engine uses), called directly: a round of reads
// is submitted in one call and reaped in another, so the disk sees them all
// at once, whatever the Go scheduler does with threads blocked in pread.

// iocb is the kernel's struct iocb (linux/aio_abi.h), little-endian.
type iocb struct {
	data   uint64
	_      uint32 // key
	_      uint32 // rw_flags
	opcode uint16
	_      int16 // reqprio
	fd     uint32
	buf    uint64
	nbytes uint64
	offset int64
	_      uint64 // reserved2
	_      uint32 // flags
	_      uint32 // resfd
}

// ioEvent is the kernel's struct io_event.
type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

const iocbCmdPread = 0

// aioReader submits rounds of random block reads of a directReader's
// files through one kernel AIO context.
type aioReader struct {
	r      *directReader
	ctx    uintptr
	cbs    []iocb
	ptrs   []*iocb
	events []ioEvent
	// submitting is the time its rounds spent in io_submit, of rounds.
	submitting time.Duration
	rounds     int
}

// newAIOReader makes a context for rounds of up to len(r.bufs) reads.
func newAIOReader(r *directReader) (*aioReader, error) {
	n := len(r.bufs)
	a := &aioReader{r: r, cbs: make([]iocb, n), ptrs: make([]*iocb, n), events: make([]ioEvent, n)}
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, uintptr(n), uintptr(unsafe.Pointer(&a.ctx)), 0); e != 0 {
		return nil, fmt.Errorf("io_setup: %w", e)
	}
	return a, nil
}

// round reads one random block into each of the first t buffers, all
// submitted at once, and returns when every one is back.
func (a *aioReader) round(rngs []*rand.Rand, t int) error {
	r := a.r
	for i := range t {
		f := rngs[i].IntN(len(r.files))
		blocks := r.sizes[f] / directBlock
		if blocks == 0 {
			return fmt.Errorf("%s: smaller than a block", r.files[f].Name())
		}
		a.cbs[i] = iocb{data: uint64(i), opcode: iocbCmdPread, fd: uint32(r.files[f].Fd()),
			buf: uint64(uintptr(unsafe.Pointer(&r.bufs[i][0]))), nbytes: directBlock, offset: rngs[i].Int64N(blocks) * directBlock}
		a.ptrs[i] = &a.cbs[i]
	}
	t0 := time.Now()
	for done := 0; done < t; {
		n, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, a.ctx, uintptr(t-done), uintptr(unsafe.Pointer(&a.ptrs[done])))
		if e == syscall.EINTR || e == syscall.EAGAIN {
			continue
		}
		if e != 0 {
			return fmt.Errorf("io_submit: %w", e)
		}
		done += int(n)
	}
	a.submitting += time.Since(t0)
	a.rounds++
	for got := 0; got < t; {
		n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, a.ctx, uintptr(t-got), uintptr(t-got), uintptr(unsafe.Pointer(&a.events[0])), 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return fmt.Errorf("io_getevents: %w", e)
		}
		for _, ev := range a.events[:n] {
			if ev.res != directBlock {
				return fmt.Errorf("an asynchronous read of %d bytes returned %d", directBlock, ev.res)
			}
		}
		got += int(n)
	}
	return nil
}

// submitMean is the mean time a round has spent in io_submit.
func (a *aioReader) submitMean() time.Duration {
	if a.rounds == 0 {
		return 0
	}
	return a.submitting / time.Duration(a.rounds)
}

func (a *aioReader) Close() {
	unix.Syscall(unix.SYS_IO_DESTROY, a.ctx, 0, 0)
}
