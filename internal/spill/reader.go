package spill

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// ErrCorrupt is wrapped by a Reader's error for a run that is not as a
// Writer wrote it.
var ErrCorrupt = errors.New("corrupt spill run")

// Record is one record of a run.
type Record struct {
	A, B uint64
	V    []byte // valid until the Reader's next Next
}

// Reader reads a run's records in order.
type Reader struct {
	r     io.Reader
	name  string
	off   int64  // the offset of the block after the one held
	block []byte // the held block's payload
	at    int    // the next record's offset in block
	boff  int64  // the held block's offset
	rec   Record
	n     int64
	err   error
}

// NewReader returns a Reader of the run in r; name names it in errors.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{r: r, name: name}
}

// Next moves to the next record; false at the run's end or on an error
// (Err).
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	for r.at == len(r.block) {
		if !r.readBlock() {
			return false
		}
	}
	vlen, k := binary.Uvarint(r.block[r.at:])
	rest := len(r.block) - r.at - max(k, 0)
	switch {
	case k <= 0:
		return r.fail("a record's length cannot be read")
	case vlen > MaxValue:
		return r.fail(fmt.Sprintf("a record's value of %d bytes, at most %d", vlen, MaxValue))
	case uint64(rest) < 16+vlen:
		return r.fail(fmt.Sprintf("a record of %d bytes with %d left in its block", 16+vlen, rest))
	}
	p := r.block[r.at+k:]
	a, b := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
	if r.n > 0 && (a < r.rec.A || a == r.rec.A && b <= r.rec.B) {
		return r.fail(fmt.Sprintf("record (%d, %d) after (%d, %d): out of order", a, b, r.rec.A, r.rec.B))
	}
	r.rec = Record{A: a, B: b, V: p[16 : 16+vlen : 16+vlen]}
	r.at += k + 16 + int(vlen)
	r.n++
	return true
}

// Record is the record Next moved to.
func (r *Reader) Record() Record { return r.rec }

// Err is the error that stopped Next, nil at the run's end.
func (r *Reader) Err() error { return r.err }

func (r *Reader) readBlock() bool {
	var h [headerLen]byte
	r.boff = r.off
	switch _, err := io.ReadFull(r.r, h[:]); {
	case err == io.EOF:
		return false
	case err == io.ErrUnexpectedEOF:
		return r.fail("a block's header cut short")
	case err != nil:
		r.err = fmt.Errorf("spill run %s: reading the block at offset %d: %w", r.name, r.boff, err)
		return false
	}
	n, sum := binary.LittleEndian.Uint32(h[:4]), binary.LittleEndian.Uint32(h[4:])
	if n == 0 || n > blockSize+binary.MaxVarintLen64+16+MaxValue {
		return r.fail(fmt.Sprintf("a block of %d bytes", n))
	}
	if cap(r.block) < int(n) {
		r.block = make([]byte, n)
	}
	r.block = r.block[:n]
	if _, err := io.ReadFull(r.r, r.block); err != nil {
		r.block = r.block[:0]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return r.fail(fmt.Sprintf("a block of %d bytes cut short", n))
		}
		r.err = fmt.Errorf("spill run %s: reading the block at offset %d: %w", r.name, r.boff, err)
		return false
	}
	r.off += headerLen + int64(n)
	r.at = 0
	if crc32.Checksum(r.block, castagnoli) != sum {
		r.block = r.block[:0]
		return r.fail("checksum mismatch")
	}
	return true
}

func (r *Reader) fail(what string) bool {
	r.err = fmt.Errorf("%w %s: block at offset %d: %s", ErrCorrupt, r.name, r.boff, what)
	r.block, r.at = r.block[:0], 0
	return false
}
