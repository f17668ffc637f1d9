package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// WAL record types.
const recOps = 1

// op kinds in a WAL record.
const (
	opInsert = 1
	opDelete = 2
)

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

// decodeOps calls fn for each op of a WAL record.
func decodeOps(b []byte, fn func(del bool, d Doc)) error {
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
			fn(true, Doc{ID: id})
		case opInsert:
			if len(b) < 8 {
				return fmt.Errorf("op %d truncated", i)
			}
			fp := binary.BigEndian.Uint64(b)
			l, k := binary.Uvarint(b[8:])
			if k <= 0 || l > MaxName || uint64(len(b)-8-k) < l {
				return fmt.Errorf("op %d: bad name", i)
			}
			fn(false, Doc{ID: id, Fingerprint: fp, Name: string(b[8+k : 8+k+int(l)])})
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

func (m *memtable) applyRecord(payload []byte) error {
	return decodeOps(payload, func(del bool, d Doc) {
		if del {
			m.delete(d.ID)
		} else {
			m.insert(d)
		}
	})
}

func (e *DB) replayRecord(typ byte, payload []byte) error {
	if typ != recOps {
		return fmt.Errorf("unknown record type %d", typ)
	}
	return e.mem.applyRecord(payload)
}
