package engine

import (
	"encoding/binary"
)

// Keyspaces, one byte each. Numbers keep byte order = numeric order.
const (
	spaceMeta     = 0x01 // 0x01 name
	spaceDocs     = 0x02 // 0x02 id(8) -> fp(8) name
	spacePostings = 0x03 // 0x03 fp(8) id(8) -> name
	spaceTables   = 0x04 // 0x04 table(1) key(8) -> codec block
	spaceBlockDir = 0x05 // 0x05 table(1) key(8) -> uvarint block size
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

// formatVersion is the version of the whole on-disk layout above.
const formatVersion = 1

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
