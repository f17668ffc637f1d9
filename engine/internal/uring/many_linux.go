package uring

import (
	"io"

	"github.com/simhashdb/simhashdb/internal/directio"
)

// maxBatch is the most reads ReadMany enters together (or the ring's
// entries, if fewer); more go in batches, one after another.
const maxBatch = 64

// ReadMany reads every read of rs, entering those the page cache does not
// hold in one submission, and waits for them on the calling goroutine: a
// caller that knows all of its reads at once (a query's blocks, one a
// table) reaches the disk with all of them, without a goroutine each to
// start and to wake. It reports whether any waited for the disk.
func (r *Ring) ReadMany(rs []Read) (disk bool) {
	for len(rs) > 0 {
		n := min(len(rs), maxBatch, cap(r.room))
		disk = r.readMany(rs[:n], false) || disk
		rs = rs[n:]
	}
	return disk
}

// readMany is ReadMany of at most maxBatch reads; gather is enter's.
func (r *Ring) readMany(rs []Read, gather bool) (disk bool) {
	var reqs [maxBatch]*request
	var bufs [maxBatch]*aligned
	var at [maxBatch]int // the read of rs each request is for
	var all []request    // the requests, one allocation
	n := 0
	for i := range rs {
		rd := &rs[i]
		rd.N, rd.Err, rd.Cached = 0, nil, false
		size := rd.size()
		var fd uintptr
		var p []byte
		var off int64
		if rd.Direct {
			if !rd.Unchecked && cached(rd.Fd, rd.Off, size) {
				rd.borrow()
				rd.N, rd.Err = preadFull(rd.Fd, rd.P, rd.Off)
				rd.Cached = true
				continue
			}
			start := rd.Off &^ (page - 1)
			end := (rd.Off + int64(size) + page - 1) &^ (page - 1)
			bufs[n] = alignedBuffer(int(end - start))
			fd, p, off = rd.DirectFd, bufs[n].b, start
		} else {
			rd.borrow()
			k, done, err := r.readCached(rd.Fd, rd.P, rd.Off)
			if done {
				rd.N, rd.Err = k, err
				continue
			}
			rd.N = k
			fd, p, off = rd.Fd, rd.P[k:], rd.Off+int64(k)
		}
		if all == nil {
			all = make([]request, len(rs)-i)
		}
		all[n] = request{fd: fd, p: p, off: off}
		reqs[n] = &all[n]
		at[n] = i
		n++
	}
	if n == 0 {
		return false
	}
	g := newGroup(n)
	for _, req := range reqs[:n] {
		req.g = g
	}
	err := r.readBatch(reqs[:n], gather)
	for x, req := range reqs[:n] {
		rd := &rs[at[x]]
		k, rerr := 0, err
		if rerr == nil {
			k, rerr = r.finish(req)
		}
		if b := bufs[x]; b != nil {
			skip := int(rd.Off - req.off)
			size := rd.size()
			have := max(0, min(k-skip, size))
			if rd.P == nil { // the ring's: where it landed, moved to the 8-byte boundary below
				a := skip &^ 7
				if a != skip {
					copy(b.b[a:], b.b[skip:skip+have])
				}
				rd.P, rd.lent, rd.N = b.b[a:a+size], b, have
			} else {
				rd.N = copy(rd.P[:have], b.b[skip:])
				b.release()
			}
			if rd.N < size && rerr == nil {
				rerr = io.EOF
			}
			if rd.N == size && rerr == io.EOF {
				rerr = nil // the page past the file's end
			}
		} else {
			rd.N += k
		}
		rd.Err = rerr
	}
	return true
}

// size is the bytes rd reads: len(P), or Len into a buffer of the ring's.
func (rd *Read) size() int {
	if rd.P == nil {
		return rd.Len
	}
	return len(rd.P)
}

// borrow gives a Read with P nil a buffer of the ring's to read into.
func (rd *Read) borrow() {
	if rd.P == nil {
		rd.lent = alignedBuffer(rd.Len)
		rd.P = rd.lent.b
	}
}

// cached reports whether the page cache holds every byte of the n at off
// of the file open as fd.
func cached(fd uintptr, off int64, n int) bool {
	held, err := directio.Cached(fd, off, n)
	return held && err == nil
}

// finish completes a request the ring has answered as readRing would have
// read it: the rest of a short read, a read the ring refused, an error.
func (r *Ring) finish(req *request) (int, error) {
	if req.err != nil {
		return 0, req.err
	}
	n := max(0, int(req.res))
	switch {
	case req.res == 0 && len(req.p) > 0:
		return 0, io.EOF
	case n == len(req.p):
		return n, nil
	}
	// Short, or an errno that readRing knows what to do with (a retry, a
	// pread, the error named).
	k, err := r.readRing(req.fd, req.p[n:], req.off+int64(n))
	return n + k, err
}
