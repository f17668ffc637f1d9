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
// Direct reads of a file whose pages overlap or touch go to the disk as
// one request (mergeDirect).
func (r *Ring) readMany(rs []Read, gather bool) (disk bool) {
	var reqs [maxBatch]*request
	var bufs [maxBatch]*aligned
	var of [maxBatch]int           // the request each read of rs is in, -1 for none
	var spans [maxBatch]directSpan // the direct reads to the disk
	var all []request              // the requests, one allocation
	n, ns := 0, 0
	add := func(fd uintptr, p []byte, off int64) int {
		if all == nil {
			all = make([]request, len(rs))
		}
		all[n] = request{fd: fd, p: p, off: off}
		reqs[n] = &all[n]
		n++
		return n - 1
	}
	for i := range rs {
		rd := &rs[i]
		rd.N, rd.Err, rd.Cached = 0, nil, false
		of[i] = -1
		size := rd.size()
		if rd.Direct {
			if !rd.Unchecked && cached(rd.Fd, rd.Off, size) {
				rd.borrow()
				rd.N, rd.Err = preadFull(rd.Fd, rd.P, rd.Off)
				rd.Cached = true
				continue
			}
			start := rd.Off &^ (page - 1)
			end := (rd.Off + int64(size) + page - 1) &^ (page - 1)
			spans[ns] = directSpan{i: i, fd: rd.DirectFd, start: start, end: end}
			ns++
			continue
		}
		rd.borrow()
		k, done, err := r.readCached(rd.Fd, rd.P, rd.Off)
		if done {
			rd.N, rd.Err = k, err
			continue
		}
		rd.N = k
		of[i] = add(rd.Fd, rd.P[k:], rd.Off+int64(k))
	}
	var ms [maxBatch]merged
	for _, m := range ms[:mergeDirect(spans[:ns], &ms)] {
		b := alignedBuffer(int(m.end - m.start))
		b.share(m.hi - m.lo)
		x := add(spans[m.lo].fd, b.b, m.start)
		bufs[x] = b
		for _, sp := range spans[m.lo:m.hi] {
			of[sp.i] = x
		}
	}
	if n == 0 {
		return false
	}
	g := newGroup(n)
	for _, req := range reqs[:n] {
		req.g = g
	}
	err := r.readBatch(reqs[:n], gather)
	var got [maxBatch]int
	var errs [maxBatch]error
	for x, req := range reqs[:n] {
		got[x], errs[x] = 0, err
		if err == nil {
			got[x], errs[x] = r.finish(req)
		}
	}
	for i := range rs {
		x := of[i]
		if x < 0 {
			continue
		}
		rd, req, k, rerr := &rs[i], reqs[x], got[x], errs[x]
		if b := bufs[x]; b != nil {
			skip := int(rd.Off - req.off)
			size := rd.size()
			have := max(0, min(k-skip, size))
			switch a := skip &^ 7; {
			case rd.P != nil:
				rd.N = copy(rd.P[:have], b.b[skip:])
				b.release()
			case a == skip: // the ring's, where it landed
				rd.P, rd.lent, rd.N = b.b[a:a+size], b, have
			case b.shared(): // the ring's, moved to a buffer of its own
				own := alignedBuffer(size)
				copy(own.b, b.b[skip:skip+have])
				b.release()
				rd.P, rd.lent, rd.N = own.b, own, have
			default: // the ring's, moved to the 8-byte boundary below
				copy(b.b[a:], b.b[skip:skip+have])
				rd.P, rd.lent, rd.N = b.b[a:a+size], b, have
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

// directSpan is a direct read to the disk: read i of a batch, the pages
// [start, end) of the file open as fd.
type directSpan struct {
	i          int
	fd         uintptr
	start, end int64
}

// merged is the pages [start, end) of a file, read as one request for
// the direct reads lo to hi (exclusive) of the sorted spans.
type merged struct {
	start, end int64
	lo, hi     int
}

// maxMerged bounds the bytes of one request of merged direct reads.
const maxMerged = 64 << 10

// mergeDirect sorts sp by file and offset and puts its reads in requests,
// the first of ms, and returns how many: a read whose pages overlap or
// touch those of the request before it, of the same file, joins it up to
// maxMerged bytes. Blocks next to each other in a file (a range of keys
// over two) are not page aligned, so each would otherwise read their
// shared page once more, in a request the disk serves on its own: the
// kernel merges requests that touch, never requests that overlap.
func mergeDirect(sp []directSpan, ms *[maxBatch]merged) int {
	for i := 1; i < len(sp); i++ { // few: insertion sort
		for j := i; j > 0 && (sp[j].fd < sp[j-1].fd || sp[j].fd == sp[j-1].fd && sp[j].start < sp[j-1].start); j-- {
			sp[j], sp[j-1] = sp[j-1], sp[j]
		}
	}
	n := 0
	for i := 0; i < len(sp); n++ {
		m := merged{start: sp[i].start, end: sp[i].end, lo: i}
		for m.hi = i + 1; m.hi < len(sp) && sp[m.hi].fd == sp[i].fd && sp[m.hi].start <= m.end && max(m.end, sp[m.hi].end)-m.start <= maxMerged; m.hi++ {
			m.end = max(m.end, sp[m.hi].end)
		}
		ms[n] = m
		i = m.hi
	}
	return n
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
