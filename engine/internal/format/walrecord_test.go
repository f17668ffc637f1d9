package format

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func decodeAll(typ byte, b []byte) ([]Op, error) {
	var ops []Op
	err := DecodeRecord(typ, b, func(o Op) { ops = append(ops, o) })
	return ops, err
}

// record is the one record that inserts docs, then deletes dels.
func record(docs []Op, dels []uint64) []byte { return recordAt(docs, dels, 0) }

// recordAt is record of a commit at position pos (none when 0).
func recordAt(docs []Op, dels []uint64, pos uint64) []byte {
	recs := EncodeCommit(len(docs), func(i int) Op { return docs[i] }, dels, pos)
	if len(recs) == 0 {
		return encodeOps(nil, nil, 0, 0, nil, 0, 0)
	}
	if len(recs) != 1 {
		panic("record: more than one record")
	}
	return recs[0]
}

func TestEncodeCommitParts(t *testing.T) {
	name := strings.Repeat("n", MaxName)
	docs := make([]Op, 3*partBytes/MaxName)
	for i := range docs {
		docs[i] = Op{ID: uint64(i), Fingerprint: uint64(i) * 7, Name: name}
	}
	dels := []uint64{5, 6}
	recs := EncodeCommit(len(docs), func(i int) Op { return docs[i] }, dels, 77)
	require.Greater(t, len(recs), 2)
	var got []Op
	for i, r := range recs {
		typ := byte(RecOpsPart)
		if i == len(recs)-1 {
			typ = RecOps
		}
		ops, err := decodeAll(typ, r)
		require.NoError(t, err)
		got = append(got, ops...)
	}
	want := append(append([]Op(nil), docs...), Op{Delete: true, ID: 5}, Op{Delete: true, ID: 6}, Op{Position: 77})
	require.Equal(t, want, got)
	require.Empty(t, EncodeCommit(0, nil, nil, 0))
	only := EncodeCommit(0, nil, nil, 9) // a commit of its position alone
	require.Len(t, only, 1)
	ops, err := decodeAll(RecOps, only[0])
	require.NoError(t, err)
	require.Equal(t, []Op{{Position: 9}}, ops)
}

func TestWALRecord(t *testing.T) {
	docs := []Op{{ID: 1, Fingerprint: 0}, {ID: 1<<64 - 1, Fingerprint: 1<<64 - 1, Name: "https://example.com/"},
		{ID: 7, Fingerprint: 42, Name: strings.Repeat("n", MaxName)}}
	rec := record(docs, []uint64{3, 1})
	got, err := decodeAll(RecOps, rec)
	require.NoError(t, err)
	require.Equal(t, []Op{docs[0], docs[1], docs[2], {Delete: true, ID: 3}, {Delete: true, ID: 1}}, got)
	got, err = decodeAll(RecOps, recordAt(docs[:1], []uint64{3}, 1<<64-1))
	require.NoError(t, err)
	require.Equal(t, []Op{docs[0], {Delete: true, ID: 3}, {Position: 1<<64 - 1}}, got)
	at := recordAt(docs[:1], nil, 5)

	for _, tc := range []struct {
		name string
		typ  byte
		rec  []byte
		want string
	}{
		{"unknown type", 3, rec, "unknown record type 3"},
		{"empty", RecOps, nil, "bad op count"},
		{"count above the bytes", RecOps, []byte{100}, "bad op count"},
		{"cut in the last op", RecOps, rec[:len(rec)-3], "truncated"},
		{"bytes after the last op", RecOps, append(record(docs[:1], nil), 0), "1 bytes after"},
		{"unknown op kind", RecOps, []byte{1, 9, 0, 0, 0, 0, 0, 0, 0, 1}, "unknown kind 9"},
		{"stored name longer than MaxStored", RecOps, record([]Op{{ID: 1, Name: strings.Repeat("n", MaxStored+1)}}, nil), "bad name"},
		{"a position in a part record", RecOpsPart, at, "does not end its commit"},
		{"a position before the last op", RecOps, []byte{2, opPosition, 0, 0, 0, 0, 0, 0, 0, 5, opDelete, 0, 0, 0, 0, 0, 0, 0, 1}, "before the record's last op"},
		{"position 0", RecOps, []byte{1, opPosition, 0, 0, 0, 0, 0, 0, 0, 0}, "position 0"},
	} {
		var calls int
		err := DecodeRecord(tc.typ, tc.rec, func(Op) { calls++ })
		require.ErrorContains(t, err, tc.want, tc.name)
		require.Zero(t, calls, "%s: no op of a damaged record is applied", tc.name)
	}
}

// FuzzDecodeRecord: any payload decodes or fails before applying an op,
// never a panic; the ops that decode, encoded again (inserts first, as the
// engine writes them), decode to the same inserts and deletes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(record([]Op{{ID: 1, Fingerprint: 2, Name: "a"}}, []uint64{3}))
	f.Add(record(nil, nil))
	f.Add([]byte{2, 1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(recordAt([]Op{{ID: 1, Fingerprint: 2, Name: "a"}}, []uint64{3}, 4))
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, err := decodeAll(RecOps, b)
		if err != nil {
			require.Empty(t, ops)
			return
		}
		var docs, want []Op
		var dels []uint64
		pos := uint64(0)
		for _, o := range ops {
			switch {
			case o.Position != 0:
				pos = o.Position
			case o.Delete:
				dels = append(dels, o.ID)
			default:
				docs = append(docs, o)
				want = append(want, o)
			}
		}
		for _, id := range dels {
			want = append(want, Op{Delete: true, ID: id})
		}
		if pos != 0 {
			want = append(want, Op{Position: pos})
		}
		got, err := decodeAll(RecOps, recordAt(docs, dels, pos))
		require.NoError(t, err)
		require.Equal(t, want, got)
	})
}
