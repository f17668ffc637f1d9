package engine

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/simhashdb/simhashdb/wal"
)

// A record of the engine's write-ahead log (package wal frames and checks
// it) is one commit: a batch of inserts and deletes. This file is the one
// home of its layout: encodeOps, decodeRecord, and FuzzDecodeRecord.
//
//	uvarint count, then count ops:
//	  opInsert id(8) fp(8) uvarint len(name) name
//	  opDelete id(8)

// recOps is the type of a record of ops, the only one.
const recOps = 1

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
	if typ != recOps {
		return fmt.Errorf("%w: unknown record type %d", wal.ErrCorrupt, typ)
	}
	if err := scanOps(b, nil); err != nil {
		return fmt.Errorf("%w: %w", wal.ErrCorrupt, err)
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

// replayRecord applies a record of the log to the memtable.
func (e *DB) replayRecord(typ byte, payload []byte) error {
	return decodeRecord(typ, payload, func(del bool, d Doc) {
		if del {
			e.mem.delete(d.ID)
		} else {
			e.mem.insert(d)
		}
	})
}
