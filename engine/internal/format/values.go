package format

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/simhashdb/simhashdb/wal"
)

// This file is the one home of the layouts of the values the engine
// stores (besides the codec's blocks and the pending lists): each has one
// encoder and one decoder here, and a fuzz target in format_test.go.

// Version is the version of the whole on-disk layout. Version 2
// added pending lists (SpacePending, counted in the directory entries).
// Version 3 lets a pending list be several runs, which a flush appends with
// Pebble's concatenating merge instead of reading and rewriting the list,
// and counts the lists' fingerprints on open instead of in the directory,
// which a flush then need not rewrite for each block it appends to. A
// version 1 index has no pending lists; a version 2 list is one run, and a
// version 2 count in the directory is not read. Version 4 writes table
// blocks in codec version 3, which an older build cannot read, and names
// each block's codec version in its directory entry (DirEntry). An older
// index becomes version 4 at its next flush, so that an older build
// refuses it rather than misread it. Version 5 is that of an index that
// keeps a sketch with each document (MetaSketch): wherever a name is
// stored (document values, postings, log records) its sketch is stored
// just before it (StoredName). Only such an index is version 5, so that
// an older build refuses it; every other index stays version 4.
const Version = 5

// VersionFor is the version an index is written in: Version with
// sketches, 4 without.
func VersionFor(sketched bool) uint32 {
	if sketched {
		return Version
	}
	return 4
}

// MaxName is the longest document name, in bytes.
const MaxName = 4096

// MaxSketch is the longest sketch a document keeps, in bytes.
const MaxSketch = 128

// MaxStored is the longest name as stored: a sketch and a name.
const MaxStored = MaxSketch + MaxName

// StoredName is the name of a document of an index with sketches of
// len(sketch) bytes as stored: the sketch, then the name.
func StoredName(sketch, name string) string { return sketch + name }

// SplitStored is StoredName's inverse for sketches of size bytes; id
// names the document in errors.
func SplitStored(id uint64, stored string, size int) (sketch, name string, err error) {
	if len(stored) < size {
		return "", "", fmt.Errorf("%w: document %d: stored name of %d bytes holds no %d-byte sketch", ErrCorrupt, id, len(stored), size)
	}
	return stored[:size], stored[size:], nil
}

// VersionValue is MetaFormat's value: the version, 4 bytes big-endian.
func VersionValue(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// ParseVersion is VersionValue's inverse; it accepts the versions this build
// reads.
func ParseVersion(v []byte) (uint32, error) {
	if len(v) != 4 || binary.BigEndian.Uint32(v) < 1 || binary.BigEndian.Uint32(v) > Version {
		return 0, fmt.Errorf("%w: format version %x, this build reads 1..%d", ErrCorrupt, v, Version)
	}
	return binary.BigEndian.Uint32(v), nil
}

// UvarintValue is the value of a metadata number (MetaBlock).
func UvarintValue(x uint64) []byte { return binary.AppendUvarint(nil, x) }

// ParseUvarint is UvarintValue's inverse; what names the value in errors.
func ParseUvarint(v []byte, what string) (uint64, error) {
	x, n := binary.Uvarint(v)
	if n <= 0 || n != len(v) {
		return 0, fmt.Errorf("%w: stored %s %x", ErrCorrupt, what, v)
	}
	return x, nil
}

// WALPosValue is MetaWALFrom's value: uvarint segment, then uvarint
// offset unless 0 (the value of an index that always flushed whole
// segments, and of older versions).
func WALPosValue(p wal.Position) []byte {
	v := binary.AppendUvarint(nil, p.Segment)
	if p.Offset != 0 {
		v = binary.AppendUvarint(v, uint64(p.Offset))
	}
	return v
}

// ParseWALPos is WALPosValue's inverse.
func ParseWALPos(v []byte) (wal.Position, error) {
	seg, n := binary.Uvarint(v)
	if n <= 0 {
		return wal.Position{}, fmt.Errorf("%w: stored WAL position %x", ErrCorrupt, v)
	}
	if n == len(v) {
		return wal.Position{Segment: seg}, nil
	}
	off, m := binary.Uvarint(v[n:])
	if m <= 0 || n+m != len(v) || off == 0 || off > math.MaxInt64 {
		return wal.Position{}, fmt.Errorf("%w: stored WAL position %x", ErrCorrupt, v)
	}
	return wal.Position{Segment: seg, Offset: int64(off)}, nil
}

// CountsValue is MetaCounts' value: uvarint documents, uvarint distinct
// fingerprints.
func CountsValue(docs, fps int64) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(nil, uint64(docs)), uint64(fps))
}

// ParseCounts is CountsValue's inverse.
func ParseCounts(v []byte) (docs, fps int64, err error) {
	d, n1 := binary.Uvarint(v)
	f, n2 := binary.Uvarint(v[max(n1, 0):])
	if n1 <= 0 || n2 <= 0 || n1+n2 != len(v) || d > 1<<62 || f > d {
		return 0, 0, fmt.Errorf("%w: stored counters %x", ErrCorrupt, v)
	}
	return int64(d), int64(f), nil
}

func DocValue(fp uint64, name string) []byte {
	return AppendDocValue(make([]byte, 0, 8+len(name)), fp, name)
}

// AppendDocValue appends the value of a document to dst: its fingerprint, 8
// bytes big-endian, and its name.
func AppendDocValue[S ~string | ~[]byte](dst []byte, fp uint64, name S) []byte {
	return append(binary.BigEndian.AppendUint64(dst, fp), name...)
}

// ParseDocValue is DocValue's inverse; id names the document in errors.
func ParseDocValue(id uint64, v []byte) (fp uint64, name string, err error) {
	if len(v) < 8 || len(v) > 8+MaxStored {
		return 0, "", fmt.Errorf("%w: document %d: value of %d bytes", ErrCorrupt, id, len(v))
	}
	return binary.BigEndian.Uint64(v), string(v[8:]), nil
}

// DocFingerprint is ParseDocValue without the name.
func DocFingerprint(id uint64, v []byte) (uint64, error) {
	if len(v) < 8 || len(v) > 8+MaxStored {
		return 0, fmt.Errorf("%w: document %d: value of %d bytes", ErrCorrupt, id, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// DirEntry is what a table's block directory says of a block: its size
// and the codec version it was written in (0: unknown, a block written
// before format version 4, of codec version 1 or 2).
type DirEntry uint32

// dirSizeBits holds the size (codec.MaxBlockSize is 1<<20); the version
// is above it.
const dirSizeBits = 24

// NewDirEntry returns the entry of a block of size bytes in codec version
// version.
func NewDirEntry(size int, version uint8) DirEntry {
	return DirEntry(uint32(version)<<dirSizeBits | uint32(size))
}

// Size returns the block's size in bytes.
func (e DirEntry) Size() int { return int(e & (1<<dirSizeBits - 1)) }

// Version returns the block's codec version, 0 if the directory does not
// know it.
func (e DirEntry) Version() uint8 { return uint8(e >> dirSizeBits) }

// DirValue is a block directory entry as stored: uvarint(version<<24 |
// size). (Format version 2 added a pending count after it, which later
// versions ignore; before version 4 the version bits are 0.)
func DirValue(e DirEntry) []byte { return binary.AppendUvarint(nil, uint64(e)) }

// ParseDirValue is DirValue's inverse, and reads a version 2 entry too.
func ParseDirValue(v []byte) (DirEntry, error) {
	s, n := binary.Uvarint(v)
	m := 0
	if n > 0 && n < len(v) {
		_, m = binary.Uvarint(v[n:])
	}
	if n <= 0 || m < 0 || n+m != len(v) || s >= 1<<32 || s&(1<<dirSizeBits-1) > 1<<20 {
		return 0, fmt.Errorf("%w: block directory entry %x", ErrCorrupt, v)
	}
	return DirEntry(s), nil
}
