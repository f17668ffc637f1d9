package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/simhashdb/simhashdb/wal"
)

// A commit (a batch of inserts and deletes) is one record of the engine's
// write-ahead log (package wal frames and checks it), or, when large, a run
// of records: RecOpsPart ones, then the RecOps one that commits them. This
// file is the one home of their layout: EncodeCommit, DecodeRecord, and
// FuzzDecodeRecord.
//
//	uvarint count, then count ops:
//	  opInsert id(8) fp(8) uvarint len(name) name
//	  opDelete id(8)
//	  opPosition position(8), not 0: the last op of a commit's RecOps
//	    record, when the commit has a position (engine.Commit.Position)

// Record types.
const (
	// RecOps holds ops and commits them with the RecOpsPart records just
	// before it, if any.
	RecOps = 1
	// RecOpsPart holds ops of a commit that a later RecOps record ends;
	// without it (a crash while the commit was written) they are dropped.
	RecOpsPart = 2
)

// partBytes is the size past which a commit's ops go on in another record,
// well under the log's limit on one record.
const partBytes = 4 << 20

// Op is one operation of a commit: an insert of a document (ID,
// Fingerprint, Name), or, when Delete, a delete of document ID, or, when
// Position is not 0 (and the rest is), the commit's position.
type Op struct {
	Delete      bool
	ID          uint64
	Fingerprint uint64
	Name        string
	Position    uint64
}

// EncodeCommit returns the payloads of the records of a commit that
// inserts n documents, insert(i) the i-th, then deletes deletes, at
// position pos (none when 0). (A function rather than a slice of Op, so
// that the write path encodes its callers' documents as they are, without
// a copy.)
func EncodeCommit(n int, insert func(i int) Op, deletes []uint64, pos uint64) [][]byte {
	var out [][]byte
	for p := range CommitParts(n, insert, deletes, pos) {
		out = append(out, append([]byte(nil), p...))
	}
	return out
}

// CommitParts yields the payloads EncodeCommit returns one at a time, each
// valid until the next, with its record type (RecOps for the last,
// RecOpsPart before it): a large commit is never encoded whole in memory
// beside the log's copy of it.
func CommitParts(n int, insert func(i int) Op, deletes []uint64, pos uint64) iter.Seq2[[]byte, byte] {
	return func(yield func([]byte, byte) bool) {
		var buf []byte
		for lo := 0; lo < n || len(deletes) > 0 || pos != 0; {
			hi, size := lo, 0
			for hi < n && size < partBytes {
				size += 1 + 16 + 3 + len(insert(hi).Name)
				hi++
			}
			nx := 0
			if hi == n {
				nx = min(len(deletes), (partBytes-size)/9+1)
			}
			last := hi == n && nx == len(deletes)
			at := uint64(0)
			if last {
				at = pos
			}
			buf = encodeOps(buf[:0], insert, lo, hi, deletes[:nx], at, size)
			typ := byte(RecOpsPart)
			if last {
				typ = RecOps
			}
			if !yield(buf, typ) {
				return
			}
			lo, deletes = hi, deletes[nx:]
			if last {
				return
			}
		}
	}
}

// CommitBytes bounds the bytes of the records of a commit of n inserts
// and d deletes whose names take names bytes, and a position, frames
// included.
func CommitBytes(n, names, d int) int {
	size := n*(1+16+3) + names + 9*d + 9
	return size + (size/partBytes+2)*(10+wal.HeaderLen)
}

// op kinds in a record.
const (
	opInsert   = 1
	opDelete   = 2
	opPosition = 3
)

// encodeOps appends to b the payload of a record that inserts insert(lo..hi-1), of
// about size bytes, then deletes deletes, then ends its commit at position
// pos (none when 0).
func encodeOps(b []byte, insert func(i int) Op, lo, hi int, deletes []uint64, pos uint64, size int) []byte {
	b = slices.Grow(b, 19+size+9*len(deletes))
	n := hi - lo + len(deletes)
	if pos != 0 {
		n++
	}
	b = binary.AppendUvarint(b, uint64(n))
	for i := lo; i < hi; i++ {
		d := insert(i)
		b = append(b, opInsert)
		b = binary.BigEndian.AppendUint64(b, d.ID)
		b = binary.BigEndian.AppendUint64(b, d.Fingerprint)
		b = binary.AppendUvarint(b, uint64(len(d.Name)))
		b = append(b, d.Name...)
	}
	for _, id := range deletes {
		b = append(b, opDelete)
		b = binary.BigEndian.AppendUint64(b, id)
	}
	if pos != 0 {
		b = append(b, opPosition)
		b = binary.BigEndian.AppendUint64(b, pos)
	}
	return b
}

// DecodeRecord calls fn for each op of a record of type typ, in order. It
// checks the whole record first, so that fn sees a damaged record's ops not
// at all. Its errors match wal.ErrCorrupt: the replay names the place.
func DecodeRecord(typ byte, b []byte, fn func(Op)) error {
	if typ != RecOps && typ != RecOpsPart {
		return fmt.Errorf("%w: unknown record type %d", wal.ErrCorrupt, typ)
	}
	if err := scanOps(b, typ == RecOps, nil); err != nil {
		return fmt.Errorf("%w: %w", wal.ErrCorrupt, err)
	}
	if fn == nil {
		return nil
	}
	return scanOps(b, typ == RecOps, fn)
}

// scanOps calls fn, if not nil, for each op of a record's payload b, the
// last of its commit if last.
func scanOps(b []byte, last bool, fn func(Op)) error {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return errors.New("bad op count")
	}
	b = b[k:]
	for i := range n {
		if len(b) < 9 {
			return fmt.Errorf("op %d truncated", i)
		}
		kind, id := b[0], binary.BigEndian.Uint64(b[1:])
		b = b[9:]
		switch kind {
		case opDelete:
			if fn != nil {
				fn(Op{Delete: true, ID: id})
			}
		case opPosition:
			switch {
			case !last:
				return fmt.Errorf("op %d: a position in a record that does not end its commit", i)
			case i != n-1:
				return fmt.Errorf("op %d: a position before the record's last op", i)
			case id == 0:
				return fmt.Errorf("op %d: position 0", i)
			}
			if fn != nil {
				fn(Op{Position: id})
			}
		case opInsert:
			if len(b) < 8 {
				return fmt.Errorf("op %d truncated", i)
			}
			fp := binary.BigEndian.Uint64(b)
			l, k := binary.Uvarint(b[8:])
			if k <= 0 || l > MaxStored || uint64(len(b)-8-k) < l {
				return fmt.Errorf("op %d: bad name", i)
			}
			if fn != nil {
				fn(Op{ID: id, Fingerprint: fp, Name: string(b[8+k : 8+k+int(l)])})
			}
			b = b[8+k+int(l):]
		default:
			return fmt.Errorf("op %d: unknown kind %d", i, kind)
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("%d bytes after the last op", len(b))
	}
	return nil
}
