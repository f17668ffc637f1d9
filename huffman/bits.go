package huffman

import (
	"encoding/binary"
	"errors"
)

// ErrShortBuffer is returned by Reader when a read passes the end of its
// input.
var ErrShortBuffer = errors.New("huffman: read past end of bit stream")

// Writer appends bits, most significant first, to a byte slice. It gathers
// them in a 64-bit word and appends the word whole when it is full: one
// store per 64 bits, not one append per byte.
type Writer struct {
	buf  []byte
	acc  uint64 // pending bits, left-aligned
	nacc uint   // number of pending bits (< 64)
}

// NewWriter returns a Writer that appends to buf.
func NewWriter(buf []byte) *Writer { return &Writer{buf: buf} }

// Reset makes w append to buf, dropping pending bits. A nil buf reuses the
// storage of w's last buffer, which must no longer be in use.
func (w *Writer) Reset(buf []byte) {
	if buf == nil {
		buf = w.buf[:0]
	}
	*w = Writer{buf: buf}
}

// WriteBits appends the low n bits of v (n <= 64), most significant first.
func (w *Writer) WriteBits(v uint64, n uint) {
	if n == 0 {
		return
	}
	v &= ^uint64(0) >> (64 - n)
	if w.nacc+n < 64 {
		w.acc |= v << (64 - n) >> w.nacc
		w.nacc += n
		return
	}
	rest := w.nacc + n - 64 // bits of v that do not fit in the word
	w.buf = binary.BigEndian.AppendUint64(w.buf, w.acc|v>>rest)
	w.acc, w.nacc = v<<(64-rest), rest // rest = 0: Go's v<<64 is 0
}

// WriteBits64 appends the low n bits of v for any n <= 64.
func (w *Writer) WriteBits64(v uint64, n uint) { w.WriteBits(v, n) }

// Len returns the number of bits written.
func (w *Writer) Len() int { return len(w.buf)*8 + int(w.nacc) }

// Bytes pads the last byte with zeros and returns the buffer. The Writer
// may be used again only after Reset.
func (w *Writer) Bytes() []byte {
	for w.nacc > 0 {
		w.buf = append(w.buf, byte(w.acc>>56))
		w.acc <<= 8
		w.nacc = max(w.nacc, 8) - 8
	}
	return w.buf
}

// Reader reads bits, most significant first, from a byte slice. It refills
// a 64-bit window eight bytes at a time; past the end it reads zeros and
// remembers that it did, so a decoder checks Err once at the end instead of
// on every symbol.
type Reader struct {
	data  []byte
	pos   int    // next byte of data to load
	win   uint64 // window, left-aligned
	nwin  uint   // valid bits in win
	limit int    // total bits available
	read  int    // bits consumed
}

// NewReader returns a Reader of data.
func NewReader(data []byte) *Reader {
	r := &Reader{}
	r.Reset(data)
	return r
}

// Reset makes r read data from its start.
func (r *Reader) Reset(data []byte) {
	*r = Reader{data: data, limit: len(data) * 8}
	r.refill()
}

func (r *Reader) refill() {
	if r.pos+8 <= len(r.data) {
		// Load 8 bytes, keep as many whole bytes as fit beside the nwin bits.
		v := binary.BigEndian.Uint64(r.data[r.pos:])
		take := (64 - r.nwin) / 8
		r.win |= (v >> r.nwin) &^ (^uint64(0) >> (r.nwin + take*8))
		r.nwin += take * 8
		r.pos += int(take)
		return
	}
	for r.nwin <= 56 && r.pos < len(r.data) {
		r.win |= uint64(r.data[r.pos]) << (56 - r.nwin)
		r.nwin += 8
		r.pos++
	}
}

// Peek returns the next n bits (n <= 56) without consuming them.
func (r *Reader) Peek(n uint) uint64 {
	if r.nwin < n {
		r.refill()
	}
	return r.win >> (64 - n)
}

// Skip consumes n bits (n <= 56).
func (r *Reader) Skip(n uint) {
	if r.nwin < n {
		r.refill()
		if r.nwin < n { // past the end: supply zeros
			r.win, r.nwin = 0, 0
			r.read += int(n)
			return
		}
	}
	r.win <<= n
	r.nwin -= n
	r.read += int(n)
}

// ReadBits consumes and returns the next n bits (n <= 56).
func (r *Reader) ReadBits(n uint) uint64 {
	if n == 0 {
		return 0
	}
	v := r.Peek(n)
	r.Skip(n)
	return v
}

// ReadBits64 consumes and returns the next n bits for any n <= 64.
func (r *Reader) ReadBits64(n uint) uint64 {
	if n > 32 {
		hi := r.ReadBits(n - 32)
		return hi<<32 | r.ReadBits(32)
	}
	return r.ReadBits(n)
}

// Consumed returns the number of bits read so far.
func (r *Reader) Consumed() int { return r.read }

// Err returns ErrShortBuffer if any read went past the end of the data.
func (r *Reader) Err() error {
	if r.read > r.limit {
		return ErrShortBuffer
	}
	return nil
}
