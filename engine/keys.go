package engine

import (
	"encoding/binary"
	"fmt"
)

// Keyspaces, one byte each. Numbers keep byte order = numeric order. This
// file is the one home of every key's layout: each has one encoder and one
// decoder here, and a fuzz target in format_test.go.
const (
	spaceMeta     = 0x01 // 0x01 name
	spaceDocs     = 0x02 // 0x02 id(8) -> docValue
	spacePostings = 0x03 // 0x03 fp(8) id(8) -> name
	spaceTables   = 0x04 // 0x04 table(1) key(8) -> codec block
	spaceBlockDir = 0x05 // 0x05 table(1) key(8) -> dirValue
	spacePending  = 0x06 // 0x06 table(1) key(8) -> pending list (pendinglist.go)
)

// Metadata keys; their values are in values.go.
var (
	metaFormat  = []byte{spaceMeta, 'f'} // formatValue
	metaDesign  = []byte{spaceMeta, 'd'} // permutation.Design binary
	metaBlock   = []byte{spaceMeta, 'b'} // uvarintValue: block size
	metaWALFrom = []byte{spaceMeta, 'w'} // walPosValue: replay the WAL from here
	metaCounts  = []byte{spaceMeta, 'n'} // countsValue
	metaCodes   = []byte{spaceMeta, 'c'} // the prefix of metaCodeKey
	metaUser    = []byte{spaceMeta, 'u'} // the prefix of metaUserKey
)

// metaUserKey names an application's setting (DB.SetMeta): 0x01 'u' name.
func metaUserKey(name string) []byte { return append(append([]byte(nil), metaUser...), name...) }

// metaName names a metadata key in errors.
func metaName(k []byte) string {
	switch string(k) {
	case string(metaFormat):
		return "format version"
	case string(metaDesign):
		return "table design"
	case string(metaBlock):
		return "block size"
	case string(metaWALFrom):
		return "WAL position"
	case string(metaCounts):
		return "counters"
	}
	return fmt.Sprintf("metadata key %x", k)
}

// Key lengths.
const (
	docKeyLen       = 9
	postingKeyLen   = 17
	tableKeyLen     = 10
	metaCodeKeyLen  = 7
	postingIDOffset = 9
)

// postingPrefixLen is the length of postingPrefix: the space and the
// fingerprint.
const postingPrefixLen = 9

// metaCodeKey names code id of a table: 0x01 'c' table(1) id(4).
func metaCodeKey(table int, id uint32) []byte {
	return binary.BigEndian.AppendUint32(append(append([]byte(nil), metaCodes...), byte(table)), id)
}

// parseMetaCodeKey is metaCodeKey's inverse, for an index of tables tables.
func parseMetaCodeKey(k []byte, tables int) (table int, id uint32, err error) {
	if len(k) != metaCodeKeyLen || k[0] != spaceMeta || k[1] != metaCodes[1] || int(k[2]) >= tables {
		return 0, 0, fmt.Errorf("%w: metadata key %x", ErrCorrupt, k)
	}
	return int(k[2]), binary.BigEndian.Uint32(k[3:]), nil
}

func docKey(id uint64) []byte { return appendDocKey(make([]byte, 0, docKeyLen), id) }

// appendDocKey appends the key of document id to dst: the bulk loader's
// allocation-free form of docKey.
func appendDocKey(dst []byte, id uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, spaceDocs), id)
}

// parseDocKey is docKey's inverse.
func parseDocKey(k []byte) (id uint64, err error) {
	if len(k) != docKeyLen || k[0] != spaceDocs {
		return 0, fmt.Errorf("%w: document key %x", ErrCorrupt, k)
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

func postingKey(fp, id uint64) []byte {
	return appendPostingKey(make([]byte, 0, postingKeyLen), fp, id)
}

// appendPostingKey appends the posting key (fp, id) to dst.
func appendPostingKey(dst []byte, fp, id uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(append(dst, spacePostings), fp), id)
}

// parsePostingKey is postingKey's inverse.
func parsePostingKey(k []byte) (fp, id uint64, err error) {
	if len(k) != postingKeyLen || k[0] != spacePostings {
		return 0, 0, fmt.Errorf("%w: posting key %x", ErrCorrupt, k)
	}
	return binary.BigEndian.Uint64(k[1:]), binary.BigEndian.Uint64(k[postingIDOffset:]), nil
}

// postingPrefix is the part of fp's posting keys before the id: what
// Pebble's bloom filters hold (keyOrder).
func postingPrefix(fp uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, postingPrefixLen), spacePostings), fp)
}

// tableKey is the key of block key of a table in space (spaceTables,
// spaceBlockDir or spacePending).
func tableKey(space byte, table int, key uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{space, byte(table)}, key)
}

// parseTableKey is tableKey's inverse for an index of tables tables.
func parseTableKey(space byte, k []byte, tables int) (table int, key uint64, err error) {
	if len(k) != tableKeyLen || k[0] != space || int(k[1]) >= tables {
		return 0, 0, fmt.Errorf("%w: %s key %x", ErrCorrupt, spaceName(space), k)
	}
	return int(k[1]), binary.BigEndian.Uint64(k[2:]), nil
}

// spacePrefix is the prefix of every key of a keyspace.
func spacePrefix(space byte) []byte { return []byte{space} }

// tablePrefix is the prefix of table's keys in space.
func tablePrefix(space byte, table int) []byte { return []byte{space, byte(table)} }

// spaceBounds are the iterator bounds of a whole keyspace.
func spaceBounds(space byte) (lower, upper []byte) { return spacePrefix(space), []byte{space + 1} }

func spaceName(space byte) string {
	switch space {
	case spaceMeta:
		return "metadata"
	case spaceDocs:
		return "document"
	case spacePostings:
		return "posting"
	case spaceTables:
		return "table block"
	case spaceBlockDir:
		return "block directory"
	case spacePending:
		return "pending list"
	}
	return fmt.Sprintf("keyspace %#x", space)
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
