package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/simhashdb/simhashdb/engine/internal/memtable"

	"github.com/simhashdb/simhashdb/wal"
)

// A commit (a batch of inserts and deletes) is one record of the engine's
// write-ahead log (package wal frames and checks it), or, when large, a run
// of records: recOpsPart ones, then the recOps one that commits them. This
// file is the one home of their layout: encodeCommit, decodeRecord, and
// FuzzDecodeRecord.
//
//	uvarint count, then count ops:
//	  opInsert id(8) fp(8) uvarint len(name) name
//	  opDelete id(8)

// Record types.
const (
	// recOps holds ops and commits them with the recOpsPart records just
	// before it, if any.
	recOps = 1
	// recOpsPart holds ops of a commit that a later recOps record ends;
	// without it (a crash while the commit was written) they are dropped.
	recOpsPart = 2
)

// partBytes is the size past which a commit's ops go on in another record,
// well under the log's limit on one record.
const partBytes = 4 << 20

// encodeCommit returns the payloads of the records of a commit that
// inserts docs, then deletes deletes.
func encodeCommit(docs []Doc, deletes []uint64) [][]byte {
	var out [][]byte
	for len(docs)+len(deletes) > 0 {
		nd, size := 0, 0
		for nd < len(docs) && size < partBytes {
			size += 1 + 16 + 3 + len(docs[nd].Name)
			nd++
		}
		nx := 0
		if nd == len(docs) {
			nx = min(len(deletes), (partBytes-size)/9+1)
		}
		out = append(out, encodeOps(docs[:nd], deletes[:nx]))
		docs, deletes = docs[nd:], deletes[nx:]
	}
	return out
}

// op kinds in a record.
const (
	opInsert = 1
	opDelete = 2
)

// encodeOps is the payload of a record that inserts docs, then deletes
// deletes.
func encodeOps(docs []Doc, deletes []uint64) []byte {
	size := 10
	for _, d := range docs {
		size += 1 + 16 + 2 + len(d.Name)
	}
	b := make([]byte, 0, size+9*len(deletes))
	b = binary.AppendUvarint(b, uint64(len(docs)+len(deletes)))
	for _, d := range docs {
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
	return b
}

// decodeRecord calls fn for each op of a record of type typ, in order. It
// checks the whole record first, so that fn sees a damaged record's ops not
// at all. Its errors match wal.ErrCorrupt: the replay names the place.
func decodeRecord(typ byte, b []byte, fn func(del bool, d Doc)) error {
	if typ != recOps && typ != recOpsPart {
		return fmt.Errorf("%w: unknown record type %d", wal.ErrCorrupt, typ)
	}
	if err := scanOps(b, nil); err != nil {
		return fmt.Errorf("%w: %w", wal.ErrCorrupt, err)
	}
	if fn == nil {
		return nil
	}
	return scanOps(b, fn)
}

// scanOps calls fn, if not nil, for each op of a record's payload b.
func scanOps(b []byte, fn func(del bool, d Doc)) error {
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
				fn(true, Doc{ID: id})
			}
		case opInsert:
			if len(b) < 8 {
				return fmt.Errorf("op %d truncated", i)
			}
			fp := binary.BigEndian.Uint64(b)
			l, k := binary.Uvarint(b[8:])
			if k <= 0 || l > MaxName || uint64(len(b)-8-k) < l {
				return fmt.Errorf("op %d: bad name", i)
			}
			if fn != nil {
				fn(false, Doc{ID: id, Fingerprint: fp, Name: string(b[8+k : 8+k+int(l)])})
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

// replayer applies the log's commits to a memtable, each once its last
// record is read.
type replayer struct {
	mem *memtable.Memtable
	// parts holds the ops of the commit being read, until its recOps
	// record; what is left at the end of the log was never committed.
	parts []replayOp
}

type replayOp struct {
	del bool
	d   Doc
}

// record reads one record of the log.
func (r *replayer) record(typ byte, payload []byte) error {
	if typ == recOpsPart {
		return decodeRecord(typ, payload, func(del bool, d Doc) { r.parts = append(r.parts, replayOp{del, d}) })
	}
	if err := decodeRecord(typ, payload, nil); err != nil {
		return err
	}
	for _, op := range r.parts {
		r.apply(op.del, op.d)
	}
	r.parts = r.parts[:0]
	return decodeRecord(typ, payload, r.apply)
}

func (r *replayer) apply(del bool, d Doc) {
	if del {
		r.mem.Delete(d.ID)
	} else {
		r.mem.Insert(d.ID, d.Fingerprint, d.Name)
	}
}

// inCommit reports whether the records read so far end inside a commit.
func (r *replayer) inCommit() bool { return len(r.parts) > 0 }
