package engine

import (
	"encoding/binary"
	"fmt"
)

// Keyspaces, one byte each. Numbers keep byte order = numeric order.
const (
	spaceMeta     = 0x01 // 0x01 name
	spaceDocs     = 0x02 // 0x02 id(8) -> fp(8) name
	spacePostings = 0x03 // 0x03 fp(8) id(8) -> name
	spaceTables   = 0x04 // 0x04 table(1) key(8) -> codec block
	spaceBlockDir = 0x05 // 0x05 table(1) key(8) -> uvarint block size [, uvarint pending count]
	spacePending  = 0x06 // 0x06 table(1) key(8) -> the block's pending fingerprints (pendingValue)
)

// Metadata keys.
var (
	metaFormat  = []byte{spaceMeta, 'f'} // uint32 format version
	metaDesign  = []byte{spaceMeta, 'd'} // permutation.Design binary
	metaBlock   = []byte{spaceMeta, 'b'} // uvarint block size
	metaWALFrom = []byte{spaceMeta, 'w'} // uvarint: replay the WAL from this segment
	metaCounts  = []byte{spaceMeta, 'n'} // uvarint documents, uvarint fingerprints
)

// metaCodeKey names code id of a table: 0x01 'c' table(1) id(4).
func metaCodeKey(table int, id uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{spaceMeta, 'c', byte(table)}, id)
}

// formatVersion is the version of the whole on-disk layout above. Version 2
// added pending lists (spacePending and the directory's pending count); a
// version 1 index is read as one without them and becomes version 2 at its
// next flush, so that an older build refuses it rather than miss them.
const formatVersion = 2

// MaxName is the longest document name, in bytes.
const MaxName = 4096

func docKey(id uint64) []byte { return appendDocKey(make([]byte, 0, 9), id) }

// appendDocKey appends the key of document id to dst: the bulk loader's
// allocation-free form of docKey.
func appendDocKey(dst []byte, id uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, spaceDocs), id)
}

func postingKey(fp, id uint64) []byte { return appendPostingKey(make([]byte, 0, 17), fp, id) }

// appendPostingKey appends the posting key (fp, id) to dst.
func appendPostingKey(dst []byte, fp, id uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(append(dst, spacePostings), fp), id)
}

func postingPrefix(fp uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{spacePostings}, fp)
}

func tableKey(space byte, table int, key uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{space, byte(table)}, key)
}

// prefixEnd returns the smallest key above every key that starts with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil // p is all 0xff: no upper bound
}

func docValue(fp uint64, name string) []byte {
	return appendDocValue(make([]byte, 0, 8+len(name)), fp, name)
}

// appendDocValue appends the value of a document to dst.
func appendDocValue(dst []byte, fp uint64, name string) []byte {
	return append(binary.BigEndian.AppendUint64(dst, fp), name...)
}

// dirValue is a block directory entry: the block's size and how many
// pending fingerprints it has (omitted when none, as version 1 wrote it).
func dirValue(size, pending int) []byte {
	v := binary.AppendUvarint(nil, uint64(size))
	if pending > 0 {
		v = binary.AppendUvarint(v, uint64(pending))
	}
	return v
}

// pendingValue encodes sorted, distinct permuted fingerprints: the first
// as 8 bytes, then the uvarint gaps.
func pendingValue(fps []uint64) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+4*len(fps)), fps[0])
	for i := 1; i < len(fps); i++ {
		v = binary.AppendUvarint(v, fps[i]-fps[i-1])
	}
	return v
}

// parsePending decodes a pendingValue of n fingerprints.
func parsePending(v []byte, n int) ([]uint64, error) {
	if len(v) < 8 || n < 1 {
		return nil, fmt.Errorf("%w: pending list of %d bytes for %d fingerprints", ErrCorrupt, len(v), n)
	}
	out := make([]uint64, 1, n)
	out[0] = binary.BigEndian.Uint64(v)
	for p := 8; p < len(v); {
		gap, m := binary.Uvarint(v[p:])
		last := out[len(out)-1]
		if m <= 0 || gap == 0 || last+gap < last || len(out) == n {
			return nil, fmt.Errorf("%w: pending list: bad entry %d", ErrCorrupt, len(out))
		}
		out = append(out, last+gap)
		p += m
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: pending list holds %d fingerprints, the directory says %d", ErrCorrupt, len(out), n)
	}
	return out, nil
}
