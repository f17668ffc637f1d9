package uring

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrUnsupported is wrapped by New's error where the kernel refuses
// io_uring.
var ErrUnsupported = errors.ErrUnsupported

// The kernel's interface (linux/io_uring.h).
const (
	opRead         = 22 // IORING_OP_READ
	offSQRing      = 0
	offCQRing      = 0x8000000
	offSQEs        = 0x10000000
	featSingleMmap = 1 << 0
	enterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS
)

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	rwFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	pad2        uint64
}

type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// request is one read in flight, of group g.
type request struct {
	fd  uintptr
	off int64
	p   []byte // kept here while the kernel writes into it
	res int32
	err error // not submitted
	g   *group
}

// group is the reads one goroutine waits for together (a batch, or one
// read): it waits on done, closed when the last completes, or on lead,
// which hands it the waiting for the ring's completions. One channel a
// group, not a read: a query's dozen reads make two channels, not twelve.
type group struct {
	left int // reads not completed; the ring's mu guards it
	done chan struct{}
	lead chan struct{} // buffered: the waiter's role, handed to this group's goroutine
}

func newGroup(n int) *group {
	return &group{left: n, done: make(chan struct{}), lead: make(chan struct{}, 1)}
}

// complete notes that req is over (read, or failed to enter); mu is held.
func complete(req *request) {
	if req.g.left--; req.g.left == 0 {
		close(req.g.done)
	}
}

// Ring is an io_uring instance for reads. Its methods are safe for
// concurrent use.
type Ring struct {
	fd             int
	sqRing, cqRing []byte
	sqes           []sqe
	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        []uint32
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []cqe
	room           chan struct{} // a place for each read in flight
	closing        chan struct{} // closed by Close
	batchMu        sync.Mutex    // held while a batch takes its places in room
	mu             sync.Mutex    // the submission queue, the completion queue, slots
	slots          []*request
	free           []uint32
	closed         bool
	// unsubmitted reads wait in the submission queue for the one that
	// leads them (submitting) to enter them together.
	unsubmitted int
	submitting  bool
	// inflight reads have been entered and not completed; while there are
	// any, one of their goroutines (waiting) waits in io_uring_enter for
	// the completions and hands them out (the package doc says why).
	inflight int
	waiting  bool
	noNowait atomic.Bool // the kernel refuses RWF_NOWAIT reads
	t        times
}

// New makes a ring for up to entries reads in flight (a power of two).
func New(entries int) (*Ring, error) {
	var p params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("%w: io_uring_setup: %w", ErrUnsupported, errno)
	}
	r := &Ring{fd: int(fd)}
	if err := r.mapRings(&p); err != nil {
		r.unmap()
		unix.Close(r.fd)
		return nil, err
	}
	n := int(p.sqEntries)
	r.room = make(chan struct{}, n)
	r.slots = make([]*request, n)
	for i := n - 1; i >= 0; i-- {
		r.free = append(r.free, uint32(i))
	}
	r.closing = make(chan struct{})
	if err := r.probe(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// probe reads a byte from a pipe through the ring: a kernel whose
// io_uring does not know reads (before Linux 5.6) refuses it.
func (r *Ring) probe() error {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("%w: a pipe to try the ring: %w", ErrUnsupported, err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if _, err := unix.Write(fds[1], []byte{42}); err != nil {
		return fmt.Errorf("%w: a pipe to try the ring: %w", ErrUnsupported, err)
	}
	var b [1]byte
	res, err := r.read(uintptr(fds[0]), b[:], -1) // -1: a pipe's current position
	if err != nil || res != 1 || b[0] != 42 {
		return fmt.Errorf("%w: a read through the ring gave %d, %v", ErrUnsupported, res, err)
	}
	return nil
}

func (r *Ring) mapRings(p *params) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	if p.features&featSingleMmap != 0 {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.sqRing, err = unix.Mmap(r.fd, offSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("%w: mapping the submission ring: %w", ErrUnsupported, err)
	}
	r.cqRing = r.sqRing
	if p.features&featSingleMmap == 0 {
		if r.cqRing, err = unix.Mmap(r.fd, offCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			r.cqRing = nil
			return fmt.Errorf("%w: mapping the completion ring: %w", ErrUnsupported, err)
		}
	}
	sqesBytes, err := unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("%w: mapping the submission entries: %w", ErrUnsupported, err)
	}
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&sqesBytes[0])), p.sqEntries)
	u32 := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	r.sqHead, r.sqTail = u32(r.sqRing, p.sqOff.head), u32(r.sqRing, p.sqOff.tail)
	r.sqMask = *u32(r.sqRing, p.sqOff.ringMask)
	r.sqArray = unsafe.Slice(u32(r.sqRing, p.sqOff.array), p.sqEntries)
	r.cqHead, r.cqTail = u32(r.cqRing, p.cqOff.head), u32(r.cqRing, p.cqOff.tail)
	r.cqMask = *u32(r.cqRing, p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&r.cqRing[p.cqOff.cqes])), p.cqEntries)
	return nil
}

func (r *Ring) unmap() {
	if r.sqes != nil {
		unix.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(&r.sqes[0])), len(r.sqes)*int(unsafe.Sizeof(sqe{}))))
		r.sqes = nil
	}
	if len(r.cqRing) > 0 && &r.cqRing[0] != &r.sqRing[0] {
		unix.Munmap(r.cqRing)
	}
	if r.sqRing != nil {
		unix.Munmap(r.sqRing)
	}
	r.sqRing, r.cqRing = nil, nil
}

// ErrClosed is returned by ReadAt after Close.
var ErrClosed = errors.New("uring: ring closed")

// ReadAt reads len(p) bytes of the file fd at off, as io.ReaderAt does:
// fewer only with an error (io.EOF at the file's end).
func (r *Ring) ReadAt(fd uintptr, p []byte, off int64) (int, error) {
	n, _, err := r.ReadAtDisk(fd, p, off)
	return n, err
}

// ReadAtDisk is ReadAt, and says whether the read waited for the disk:
// false when the page cache held all of it.
func (r *Ring) ReadAtDisk(fd uintptr, p []byte, off int64) (n int, disk bool, err error) {
	select {
	case <-r.closing:
		return 0, false, ErrClosed
	default:
	}
	rs := [1]Read{{Fd: fd, P: p, Off: off}}
	disk = r.readMany(rs[:], true)
	return rs[0].N, disk, rs[0].Err
}

// readCached reads what the page cache holds of p at off at once, without
// the ring: RWF_NOWAIT returns EAGAIN rather than wait for the disk. done
// says the read is over (all of it read, the file's end, an error); else
// n bytes are read and the rest is the disk's.
func (r *Ring) readCached(fd uintptr, p []byte, off int64) (n int, done bool, err error) {
	if !r.noNowait.Load() {
		k, err := unix.Preadv2(int(fd), [][]byte{p}, off, unix.RWF_NOWAIT)
		switch {
		case err == nil && k == 0 && len(p) > 0:
			return 0, true, io.EOF
		case err == nil:
			n = k
		case errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EINVAL):
			r.noNowait.Store(true)
		case !errors.Is(err, syscall.EAGAIN):
			return 0, true, &os.PathError{Op: "read", Path: fmt.Sprintf("fd %d", fd), Err: err}
		}
	}
	return n, n == len(p), nil
}

// readRing reads p at off through the ring, as io.ReaderAt does: short
// only with an error, io.EOF at the file's end.
func (r *Ring) readRing(fd uintptr, p []byte, off int64) (n int, err error) {
	for n < len(p) {
		res, err := r.read(fd, p[n:], off+int64(n))
		if err != nil {
			return n, err
		}
		switch {
		case res > 0:
			n += int(res)
		case res == 0:
			return n, io.EOF
		case syscall.Errno(-res) == syscall.EINTR || syscall.Errno(-res) == syscall.EAGAIN:
		case syscall.Errno(-res) == syscall.EINVAL || syscall.Errno(-res) == syscall.EOPNOTSUPP:
			// A file the ring cannot read: pread, as without it.
			k, err := preadFull(fd, p[n:], off+int64(n))
			return n + k, err
		default:
			return n, &os.PathError{Op: "read", Path: fmt.Sprintf("fd %d", fd), Err: syscall.Errno(-res)}
		}
	}
	return n, nil
}

// preadFull reads p at off with pread, as io.ReaderAt does: short only
// with an error, io.EOF at the file's end.
func preadFull(fd uintptr, p []byte, off int64) (n int, err error) {
	for n < len(p) {
		k, err := unix.Pread(int(fd), p[n:], off+int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, &os.PathError{Op: "read", Path: fmt.Sprintf("fd %d", fd), Err: err}
		}
		if k == 0 {
			return n, io.EOF
		}
		n += k
	}
	return n, nil
}

// read submits one read and waits for its result.
func (r *Ring) read(fd uintptr, p []byte, off int64) (int32, error) {
	select {
	case r.room <- struct{}{}:
	case <-r.closing:
		return 0, ErrClosed
	}
	defer func() { <-r.room }()
	req := &request{fd: fd, p: p, off: off, g: newGroup(1)}
	if err := r.enter([]*request{req}, true); err != nil {
		return 0, err
	}
	r.await(req.g)
	return req.res, req.err
}

// readBatch submits reqs, at most the ring's entries and all of one
// group, in one submission and waits for all of them on the calling
// goroutine.
func (r *Ring) readBatch(reqs []*request, gather bool) error {
	// One batch takes its places at a time: two taking theirs one by one
	// could each hold part of room and wait for the rest.
	r.batchMu.Lock()
	for range reqs {
		select {
		case r.room <- struct{}{}:
		case <-r.closing:
			r.batchMu.Unlock()
			return ErrClosed
		}
	}
	r.batchMu.Unlock()
	defer func() {
		for range reqs {
			<-r.room
		}
	}()
	if err := r.enter(reqs, gather); err != nil {
		return err
	}
	r.await(reqs[0].g)
	return nil
}

// enter puts reqs in the submission queue and, unless another goroutine
// is about to, submits them. gather lets the goroutines ready to run issue
// their reads first (a query's reads of several tables, each on a
// goroutine of its own, then reach the disk in one submission, which the
// block layer hands the device at once); a batch has all of its reads
// already. A batch of one read goes in as read's does.
func (r *Ring) enter(reqs []*request, gather bool) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	for _, req := range reqs {
		slot := r.free[len(r.free)-1]
		r.free = r.free[:len(r.free)-1]
		r.slots[slot] = req
		tail := *r.sqTail
		i := tail & r.sqMask
		r.sqes[i] = sqe{opcode: opRead, fd: int32(req.fd), off: uint64(req.off), addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(req.p)))),
			len: uint32(len(req.p)), userData: uint64(slot)}
		r.sqArray[i] = i
		atomic.StoreUint32(r.sqTail, tail+1)
		r.unsubmitted++
	}
	lead := !r.submitting
	r.submitting = true
	if lead && gather {
		r.mu.Unlock()
		runtime.Gosched()
		r.mu.Lock()
	}
	if !lead {
		r.mu.Unlock()
		return nil
	}
	r.submit()
	wait := !r.waiting && r.inflight > 0
	r.waiting = r.waiting || wait
	r.mu.Unlock()
	if wait {
		r.wait(reqs[0].g)
	}
	return nil
}

// await returns once g's reads are done, taking the waiter's role
// whenever it is handed to g's goroutine.
func (r *Ring) await(g *group) {
	for {
		select {
		case <-g.lead:
			r.wait(g)
		case <-g.done:
			// The role may have come before the reads completed: take it
			// and hand it on.
			select {
			case <-g.lead:
				r.wait(g)
			default:
			}
			return
		}
	}
}

// submit enters the unsubmitted reads; mu is held. A failure fails those
// it could not enter (their err).
func (r *Ring) submit() {
	n := r.unsubmitted
	r.unsubmitted, r.submitting = 0, false
	// The completion queue has room for every read the ring admits (room),
	// so EBUSY and EAGAIN are the kernel short of memory for a moment.
	for tries := 0; n > 0; tries++ {
		t0 := time.Now()
		done, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(n), 0, 0, 0, 0)
		r.t.submit.Add(int64(time.Since(t0)))
		r.t.submits.Add(1)
		switch {
		case errno == 0:
			n -= int(done)
			r.inflight += int(done)
		case errno == syscall.EINTR || (errno == syscall.EAGAIN || errno == syscall.EBUSY) && tries < 100:
		default:
			// The kernel took none of the rest: fail them.
			head := atomic.LoadUint32(r.sqHead)
			tail := atomic.LoadUint32(r.sqTail)
			for ; head != tail; head++ {
				slot := r.sqes[r.sqArray[head&r.sqMask]].userData
				req := r.slots[slot]
				r.slots[slot] = nil
				r.free = append(r.free, uint32(slot))
				req.err = fmt.Errorf("io_uring_enter: %w", errno)
				complete(req)
			}
			atomic.StoreUint32(r.sqTail, atomic.LoadUint32(r.sqHead))
			return
		}
	}
}

// drain completes the reads the kernel has finished; mu is held.
func (r *Ring) drain() {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := r.cqes[head&r.cqMask]
		req := r.slots[c.userData]
		r.slots[c.userData] = nil
		r.free = append(r.free, uint32(c.userData))
		req.res = c.res
		complete(req)
		r.inflight--
	}
	atomic.StoreUint32(r.cqHead, head)
}

// wait waits in io_uring_enter for completions and hands them out, as
// the ring's one waiter, until own's reads are done; then it hands the
// role to the goroutine of a read still in flight, if any.
func (r *Ring) wait(own *group) {
	for {
		r.mu.Lock()
		r.drain()
		if r.inflight == 0 || own.left == 0 {
			next := r.anyInflight()
			if next == nil {
				r.waiting = false
			} else {
				next.lead <- struct{}{}
			}
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		// Only the waiter takes completions from the queue, so one the
		// kernel posts after the drain above is still there: a wait for
		// one returns at once.
		for {
			t0 := time.Now()
			_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 0, 1, enterGetEvents, 0, 0)
			r.t.wait.Add(int64(time.Since(t0)))
			if errno != syscall.EINTR && errno != syscall.EAGAIN && errno != syscall.EBUSY {
				break
			}
		}
	}
}

// anyInflight returns the group of a read not completed, or nil; mu is
// held. A read leaves its slot as it completes.
func (r *Ring) anyInflight() *group {
	if r.inflight == 0 {
		return nil
	}
	for _, req := range r.slots {
		if req != nil {
			return req.g
		}
	}
	return nil
}

// Close waits for the reads in flight and releases the ring. ReadAt fails
// after it.
func (r *Ring) Close() error {
	close(r.closing)
	// Every read in flight holds a place in room: take them all.
	for range cap(r.room) {
		r.room <- struct{}{}
	}
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.unmap()
	return unix.Close(r.fd)
}
