package format

import (
	"encoding/binary"
	"testing"

	"github.com/simhashdb/simhashdb/wal"
	"github.com/stretchr/testify/require"
)

// fuzzFormat checks one byte format: any input decodes or fails with
// ErrCorrupt, never a panic; what decodes encodes back to a value that
// decodes the same, and, where the format has one encoding per value
// (exact), to the very input.
func fuzzFormat[T any](t *testing.T, b []byte, exact bool, decode func([]byte) (T, error), encode func(T) []byte) {
	v, err := decode(b)
	if err != nil {
		require.ErrorIs(t, err, ErrCorrupt)
		return
	}
	again := encode(v)
	if exact {
		require.Equal(t, b, again, "re-encoded")
	}
	v2, err := decode(again)
	require.NoError(t, err, "decoding %x, encoded from %x", again, b)
	require.Equal(t, v, v2)
}

type postingID struct{ fp, id uint64 }

type tableBlock struct {
	t   int
	key uint64
}

type tableCode struct {
	t  int
	id uint32
}

type counts struct{ docs, fps int64 }

type namedFP struct {
	fp   uint64
	name string
}

func FuzzDocKey(f *testing.F) {
	f.Add(DocKey(0))
	f.Add(DocKey(1<<64 - 1))
	f.Add([]byte{SpaceDocs, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, true, ParseDocKey, DocKey)
	})
}

func FuzzPostingKey(f *testing.F) {
	f.Add(PostingKey(0, 0))
	f.Add(PostingKey(1<<64-1, 42))
	f.Add(PostingPrefix(7))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, true,
			func(b []byte) (postingID, error) { fp, id, err := ParsePostingKey(b); return postingID{fp, id}, err },
			func(p postingID) []byte { return PostingKey(p.fp, p.id) })
	})
}

func FuzzTableKey(f *testing.F) {
	for _, space := range []byte{SpaceTables, SpaceBlockDir, SpacePending} {
		f.Add(space, TableKey(space, 0, 0))
		f.Add(space, TableKey(space, 9, 1<<64-1))
	}
	f.Add(byte(SpaceTables), TableKey(SpaceTables, 10, 5)) // a table the index does not have
	f.Fuzz(func(t *testing.T, space byte, b []byte) {
		fuzzFormat(t, b, true,
			func(b []byte) (tableBlock, error) {
				tb, key, err := ParseTableKey(space, b, 10)
				return tableBlock{tb, key}, err
			},
			func(x tableBlock) []byte { return TableKey(space, x.t, x.key) })
	})
}

func FuzzMetaCodeKey(f *testing.F) {
	f.Add(MetaCodeKey(0, 1))
	f.Add(MetaCodeKey(9, 1<<32-1))
	f.Add(MetaCounts)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, true,
			func(b []byte) (tableCode, error) {
				tb, id, err := ParseMetaCodeKey(b, 10)
				return tableCode{tb, id}, err
			},
			func(x tableCode) []byte { return MetaCodeKey(x.t, x.id) })
	})
}

func FuzzFormatValue(f *testing.F) {
	for v := range uint32(Version + 2) {
		f.Add(VersionValue(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, true, ParseVersion, VersionValue)
	})
}

func FuzzUvarintValue(f *testing.F) {
	f.Add(UvarintValue(1024))
	f.Add(UvarintValue(1<<64 - 1))
	f.Add([]byte{0x80, 0x00}) // a non-minimal uvarint
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, false, func(b []byte) (uint64, error) { return ParseUvarint(b, "value") }, UvarintValue)
	})
}

func FuzzWALPosValue(f *testing.F) {
	f.Add(WALPosValue(wal.Position{Segment: 1}))
	f.Add(WALPosValue(wal.Position{Segment: 7, Offset: 1 << 40}))
	f.Add([]byte{0x01, 0x00}) // an offset of 0 written out
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, false, ParseWALPos, WALPosValue)
	})
}

func FuzzCountsValue(f *testing.F) {
	f.Add(CountsValue(0, 0))
	f.Add(CountsValue(1<<40, 1<<39))
	f.Add(CountsValue(3, 4)) // more fingerprints than documents
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, false,
			func(b []byte) (counts, error) { d, fps, err := ParseCounts(b); return counts{d, fps}, err },
			func(c counts) []byte { return CountsValue(c.docs, c.fps) })
	})
}

func FuzzDocValue(f *testing.F) {
	f.Add(DocValue(0, ""))
	f.Add(DocValue(1<<64-1, "https://example.com/"))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, true,
			func(b []byte) (namedFP, error) { fp, name, err := ParseDocValue(7, b); return namedFP{fp, name}, err },
			func(d namedFP) []byte { return DocValue(d.fp, d.name) })
		if fp, err := DocFingerprint(7, b); err == nil {
			got, _, err := ParseDocValue(7, b)
			require.NoError(t, err)
			require.Equal(t, got, fp)
		}
	})
}

func FuzzDirValue(f *testing.F) {
	f.Add(DirValue(NewDirEntry(1024, 3)))
	f.Add(append(DirValue(NewDirEntry(1000, 0)), 5)) // version 2: a pending count after the size
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, false, ParseDirValue, DirValue)
	})
}

// TestFormatsRejectCorruption names what each decoder refuses.
func TestFormatsRejectCorruption(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"doc key of 8 bytes", errOf2(ParseDocKey(DocKey(1)[:8])), "document key"},
		{"posting key in the docs space", errOf3(ParsePostingKey(append([]byte{SpaceDocs}, PostingKey(1, 2)[1:]...))), "posting key"},
		{"table key of table 10 of 10", errOf3(ParseTableKey(SpaceTables, TableKey(SpaceTables, 10, 1), 10)), "table block key"},
		{"format version 0", errOf2(ParseVersion(VersionValue(0))), "format version"},
		{"format version from the future", errOf2(ParseVersion(VersionValue(Version + 1))), "this build reads"},
		{"counts with bytes after", errOf3(ParseCounts(append(CountsValue(1, 1), 0))), "counters"},
		{"more fingerprints than documents", errOf3(ParseCounts(CountsValue(1, 2))), "counters"},
		{"document value of 7 bytes", errOf2(DocFingerprint(9, make([]byte, 7))), "document 9"},
		{"document name too long", errOf3(ParseDocValue(9, make([]byte, 8+MaxStored+1))), "document 9"},
		{"directory entry with three numbers", errOf2(ParseDirValue([]byte{1, 2, 3})), "block directory entry"},
		{"uvarint cut short", errOf2(ParseUvarint([]byte{0x80}, "block size")), "block size"},
	} {
		require.ErrorIs(t, tc.err, ErrCorrupt, tc.name)
		require.ErrorContains(t, tc.err, tc.want, tc.name)
	}
}

// errOf2 and errOf3 keep a call's error.
func errOf2[T any](_ T, err error) error         { return err }
func errOf3[A, B any](_ A, _ B, err error) error { return err }

// TestDirEntry: a directory entry keeps a block's size and codec version,
// and an entry written before format version 4 reads as version 0.
func TestDirEntry(t *testing.T) {
	for _, tc := range []struct {
		size    int
		version uint8
	}{{1, 3}, {1024, 3}, {1 << 20, 3}, {1000, 0}, {5, 255}} {
		e, err := ParseDirValue(DirValue(NewDirEntry(tc.size, tc.version)))
		require.NoError(t, err)
		require.Equal(t, tc.size, e.Size())
		require.Equal(t, tc.version, e.Version())
	}
	old, err := ParseDirValue(append(binary.AppendUvarint(nil, 1000), 7)) // format 2: size, pending count
	require.NoError(t, err)
	require.Equal(t, 1000, old.Size())
	require.Zero(t, old.Version())
	_, err = ParseDirValue(binary.AppendUvarint(nil, 1<<20+1))
	require.ErrorIs(t, err, ErrCorrupt, "a size above the codec's largest block")
}
