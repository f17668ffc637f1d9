package spill

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// MaxValue is the largest value a record holds.
const MaxValue = 1 << 20

// blockSize is about how many bytes of records a block holds: large
// enough that the header and the write are a small part of it.
const blockSize = 64 << 10

const headerLen = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Writer writes a run: records in increasing (A, B) order, in blocks.
type Writer struct {
	w      io.Writer
	buf    []byte // the block being filled, its header's room first
	a, b   uint64 // the last record's keys
	n      int64
	err    error
	closed bool
}

// NewWriter returns a Writer of a run to w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, buf: make([]byte, headerLen, headerLen+blockSize+1024)}
}

// Append adds a record. Its keys must be greater than the last record's.
func (w *Writer) Append(a, b uint64, v []byte) error {
	switch {
	case w.err != nil:
		return w.err
	case w.closed:
		return fmt.Errorf("spill: append to a closed run")
	case len(v) > MaxValue:
		return fmt.Errorf("spill: a value of %d bytes, at most %d", len(v), MaxValue)
	case w.n > 0 && (a < w.a || a == w.a && b <= w.b):
		return fmt.Errorf("spill: record (%d, %d) after (%d, %d): out of order", a, b, w.a, w.b)
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(len(v)))
	w.buf = binary.LittleEndian.AppendUint64(w.buf, a)
	w.buf = binary.LittleEndian.AppendUint64(w.buf, b)
	w.buf = append(w.buf, v...)
	w.a, w.b = a, b
	w.n++
	if len(w.buf)-headerLen >= blockSize {
		w.err = w.flush()
	}
	return w.err
}

// Records is how many records were appended.
func (w *Writer) Records() int64 { return w.n }

// Close writes the last block. It does not close the writer under it.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err == nil && len(w.buf) > headerLen {
		w.err = w.flush()
	}
	return w.err
}

func (w *Writer) flush() error {
	payload := w.buf[headerLen:]
	binary.LittleEndian.PutUint32(w.buf[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(w.buf[4:8], crc32.Checksum(payload, castagnoli))
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:headerLen]
	return err
}
