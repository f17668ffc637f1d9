package format

import (
	"encoding/binary"
	"fmt"
)

// Keyspaces, one byte each. Numbers keep byte order = numeric order. This
// file is the one home of every key's layout: each has one encoder and one
// decoder here, and a fuzz target in format_test.go.
const (
	SpaceMeta     = 0x01 // 0x01 name
	SpaceDocs     = 0x02 // 0x02 id(8) -> DocValue
	SpacePostings = 0x03 // 0x03 fp(8) id(8) -> name
	SpaceTables   = 0x04 // 0x04 table(1) key(8) -> codec block
	SpaceBlockDir = 0x05 // 0x05 table(1) key(8) -> DirValue
	SpacePending  = 0x06 // 0x06 table(1) key(8) -> pending list (pending.go)
)

// Metadata keys; their values are in values.go.
var (
	MetaFormat  = []byte{SpaceMeta, 'f'} // VersionValue
	MetaDesign  = []byte{SpaceMeta, 'd'} // permutation.Design binary
	MetaBlock   = []byte{SpaceMeta, 'b'} // UvarintValue: block size
	MetaWALFrom = []byte{SpaceMeta, 'w'} // WALPosValue: replay the WAL from here
	MetaCounts  = []byte{SpaceMeta, 'n'} // CountsValue
	MetaCodes   = []byte{SpaceMeta, 'c'} // the prefix of MetaCodeKey
	MetaUser    = []byte{SpaceMeta, 'u'} // the prefix of MetaUserKey
	MetaSketch  = []byte{SpaceMeta, 's'} // UvarintValue: the bytes of each document's sketch (version 5)
	MetaApplied = []byte{SpaceMeta, 'a'} // UvarintValue: the position of the last commit the tables hold that had one
)

// MetaUserKey names an application's setting (DB.SetMeta): 0x01 'u' name.
func MetaUserKey(name string) []byte { return append(append([]byte(nil), MetaUser...), name...) }

// MetaName names a metadata key in errors.
func MetaName(k []byte) string {
	switch string(k) {
	case string(MetaFormat):
		return "format version"
	case string(MetaDesign):
		return "table design"
	case string(MetaBlock):
		return "block size"
	case string(MetaWALFrom):
		return "WAL position"
	case string(MetaCounts):
		return "counters"
	case string(MetaSketch):
		return "sketch size"
	case string(MetaApplied):
		return "applied position"
	}
	return fmt.Sprintf("metadata key %x", k)
}

// Key lengths.
const (
	DocKeyLen       = 9
	PostingKeyLen   = 17
	TableKeyLen     = 10
	MetaCodeKeyLen  = 7
	PostingIDOffset = 9
)

// PostingPrefixLen is the length of PostingPrefix: the space and the
// fingerprint.
const PostingPrefixLen = 9

// MetaCodeKey names code id of a table: 0x01 'c' table(1) id(4).
func MetaCodeKey(table int, id uint32) []byte {
	return binary.BigEndian.AppendUint32(append(append([]byte(nil), MetaCodes...), byte(table)), id)
}

// ParseMetaCodeKey is MetaCodeKey's inverse, for an index of tables tables.
func ParseMetaCodeKey(k []byte, tables int) (table int, id uint32, err error) {
	if len(k) != MetaCodeKeyLen || k[0] != SpaceMeta || k[1] != MetaCodes[1] || int(k[2]) >= tables {
		return 0, 0, fmt.Errorf("%w: metadata key %x", ErrCorrupt, k)
	}
	return int(k[2]), binary.BigEndian.Uint32(k[3:]), nil
}

func DocKey(id uint64) []byte { return AppendDocKey(make([]byte, 0, DocKeyLen), id) }

// AppendDocKey appends the key of document id to dst: the bulk loader's
// allocation-free form of DocKey.
func AppendDocKey(dst []byte, id uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, SpaceDocs), id)
}

// ParseDocKey is DocKey's inverse.
func ParseDocKey(k []byte) (id uint64, err error) {
	if len(k) != DocKeyLen || k[0] != SpaceDocs {
		return 0, fmt.Errorf("%w: document key %x", ErrCorrupt, k)
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

func PostingKey(fp, id uint64) []byte {
	return AppendPostingKey(make([]byte, 0, PostingKeyLen), fp, id)
}

// AppendPostingKey appends the posting key (fp, id) to dst.
func AppendPostingKey(dst []byte, fp, id uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(append(dst, SpacePostings), fp), id)
}

// ParsePostingKey is PostingKey's inverse.
func ParsePostingKey(k []byte) (fp, id uint64, err error) {
	if len(k) != PostingKeyLen || k[0] != SpacePostings {
		return 0, 0, fmt.Errorf("%w: posting key %x", ErrCorrupt, k)
	}
	return binary.BigEndian.Uint64(k[1:]), binary.BigEndian.Uint64(k[PostingIDOffset:]), nil
}

// PostingPrefix is the part of fp's posting keys before the id: what
// Pebble's bloom filters hold (keyOrder).
func PostingPrefix(fp uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, PostingPrefixLen), SpacePostings), fp)
}

// TableKey is the key of block key of a table in space (SpaceTables,
// SpaceBlockDir or SpacePending).
func TableKey(space byte, table int, key uint64) []byte {
	return AppendTableKey(make([]byte, 0, TableKeyLen), space, table, key)
}

// AppendTableKey appends TableKey(space, table, key) to dst.
func AppendTableKey(dst []byte, space byte, table int, key uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, space, byte(table)), key)
}

// ParseTableKey is TableKey's inverse for an index of tables tables.
func ParseTableKey(space byte, k []byte, tables int) (table int, key uint64, err error) {
	if len(k) != TableKeyLen || k[0] != space || int(k[1]) >= tables {
		return 0, 0, fmt.Errorf("%w: %s key %x", ErrCorrupt, SpaceName(space), k)
	}
	return int(k[1]), binary.BigEndian.Uint64(k[2:]), nil
}

// SpacePrefix is the prefix of every key of a keyspace.
func SpacePrefix(space byte) []byte { return []byte{space} }

// TablePrefix is the prefix of table's keys in space.
func TablePrefix(space byte, table int) []byte { return []byte{space, byte(table)} }

// SpaceBounds are the iterator bounds of a whole keyspace.
func SpaceBounds(space byte) (lower, upper []byte) { return SpacePrefix(space), []byte{space + 1} }

func SpaceName(space byte) string {
	switch space {
	case SpaceMeta:
		return "metadata"
	case SpaceDocs:
		return "document"
	case SpacePostings:
		return "posting"
	case SpaceTables:
		return "table block"
	case SpaceBlockDir:
		return "block directory"
	case SpacePending:
		return "pending list"
	}
	return fmt.Sprintf("keyspace %#x", space)
}

// PrefixEnd returns the smallest key above every key that starts with p.
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil // p is all 0xff: no upper bound
}
