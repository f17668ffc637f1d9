package engine

import (
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
	f.Add(docKey(0))
	f.Add(docKey(1<<64 - 1))
	f.Add([]byte{spaceDocs, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, true, parseDocKey, docKey)
	})
}

func FuzzPostingKey(f *testing.F) {
	f.Add(postingKey(0, 0))
	f.Add(postingKey(1<<64-1, 42))
	f.Add(postingPrefix(7))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, true,
			func(b []byte) (postingID, error) { fp, id, err := parsePostingKey(b); return postingID{fp, id}, err },
			func(p postingID) []byte { return postingKey(p.fp, p.id) })
	})
}

func FuzzTableKey(f *testing.F) {
	for _, space := range []byte{spaceTables, spaceBlockDir, spacePending} {
		f.Add(space, tableKey(space, 0, 0))
		f.Add(space, tableKey(space, 9, 1<<64-1))
	}
	f.Add(byte(spaceTables), tableKey(spaceTables, 10, 5)) // a table the index does not have
	f.Fuzz(func(t *testing.T, space byte, b []byte) {
		fuzzFormat(t, b, true,
			func(b []byte) (tableBlock, error) {
				tb, key, err := parseTableKey(space, b, 10)
				return tableBlock{tb, key}, err
			},
			func(x tableBlock) []byte { return tableKey(space, x.t, x.key) })
	})
}

func FuzzMetaCodeKey(f *testing.F) {
	f.Add(metaCodeKey(0, 1))
	f.Add(metaCodeKey(9, 1<<32-1))
	f.Add(metaCounts)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, true,
			func(b []byte) (tableCode, error) {
				tb, id, err := parseMetaCodeKey(b, 10)
				return tableCode{tb, id}, err
			},
			func(x tableCode) []byte { return metaCodeKey(x.t, x.id) })
	})
}

func FuzzFormatValue(f *testing.F) {
	for v := range uint32(formatVersion + 2) {
		f.Add(formatValue(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, true, parseFormat, formatValue)
	})
}

func FuzzUvarintValue(f *testing.F) {
	f.Add(uvarintValue(1024))
	f.Add(uvarintValue(1<<64 - 1))
	f.Add([]byte{0x80, 0x00}) // a non-minimal uvarint
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, false, func(b []byte) (uint64, error) { return parseUvarint(b, "value") }, uvarintValue)
	})
}

func FuzzWALPosValue(f *testing.F) {
	f.Add(walPosValue(wal.Position{Segment: 1}))
	f.Add(walPosValue(wal.Position{Segment: 7, Offset: 1 << 40}))
	f.Add([]byte{0x01, 0x00}) // an offset of 0 written out
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, false, parseWALPos, walPosValue)
	})
}

func FuzzCountsValue(f *testing.F) {
	f.Add(countsValue(0, 0))
	f.Add(countsValue(1<<40, 1<<39))
	f.Add(countsValue(3, 4)) // more fingerprints than documents
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, false,
			func(b []byte) (counts, error) { d, fps, err := parseCounts(b); return counts{d, fps}, err },
			func(c counts) []byte { return countsValue(c.docs, c.fps) })
	})
}

func FuzzDocValue(f *testing.F) {
	f.Add(docValue(0, ""))
	f.Add(docValue(1<<64-1, "https://example.com/"))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, true,
			func(b []byte) (namedFP, error) { fp, name, err := parseDocValue(7, b); return namedFP{fp, name}, err },
			func(d namedFP) []byte { return docValue(d.fp, d.name) })
		if fp, err := docFingerprint(7, b); err == nil {
			got, _, err := parseDocValue(7, b)
			require.NoError(t, err)
			require.Equal(t, got, fp)
		}
	})
}

func FuzzDirValue(f *testing.F) {
	f.Add(dirValue(1024))
	f.Add(append(dirValue(1000), 5)) // version 2: a pending count after the size
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzFormat(t, b, false, parseDirValue, func(s uint32) []byte { return dirValue(int(s)) })
	})
}

// TestFormatsRejectCorruption names what each decoder refuses.
func TestFormatsRejectCorruption(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"doc key of 8 bytes", errOf2(parseDocKey(docKey(1)[:8])), "document key"},
		{"posting key in the docs space", errOf3(parsePostingKey(append([]byte{spaceDocs}, postingKey(1, 2)[1:]...))), "posting key"},
		{"table key of table 10 of 10", errOf3(parseTableKey(spaceTables, tableKey(spaceTables, 10, 1), 10)), "table block key"},
		{"format version 0", errOf2(parseFormat(formatValue(0))), "format version"},
		{"format version from the future", errOf2(parseFormat(formatValue(formatVersion + 1))), "this build reads"},
		{"counts with bytes after", errOf3(parseCounts(append(countsValue(1, 1), 0))), "counters"},
		{"more fingerprints than documents", errOf3(parseCounts(countsValue(1, 2))), "counters"},
		{"document value of 7 bytes", errOf2(docFingerprint(9, make([]byte, 7))), "document 9"},
		{"document name too long", errOf3(parseDocValue(9, make([]byte, 8+MaxName+1))), "document 9"},
		{"directory entry with three numbers", errOf2(parseDirValue([]byte{1, 2, 3})), "block directory entry"},
		{"uvarint cut short", errOf2(parseUvarint([]byte{0x80}, "block size")), "block size"},
	} {
		require.ErrorIs(t, tc.err, ErrCorrupt, tc.name)
		require.ErrorContains(t, tc.err, tc.want, tc.name)
	}
}

// errOf2 and errOf3 keep a call's error.
func errOf2[T any](_ T, err error) error         { return err }
func errOf3[A, B any](_ A, _ B, err error) error { return err }
