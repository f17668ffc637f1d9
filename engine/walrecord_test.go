package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type op struct {
	del bool
	doc Doc
}

func decodeAll(typ byte, b []byte) ([]op, error) {
	var ops []op
	err := decodeRecord(typ, b, func(del bool, d Doc) { ops = append(ops, op{del, d}) })
	return ops, err
}

func TestWALRecord(t *testing.T) {
	docs := []Doc{{ID: 1, Fingerprint: 0}, {ID: 1<<64 - 1, Fingerprint: 1<<64 - 1, Name: "https://example.com/"},
		{ID: 7, Fingerprint: 42, Name: strings.Repeat("n", MaxName)}}
	rec := encodeOps(docs, []uint64{3, 1})
	got, err := decodeAll(recOps, rec)
	require.NoError(t, err)
	require.Equal(t, []op{{false, docs[0]}, {false, docs[1]}, {false, docs[2]}, {true, Doc{ID: 3}}, {true, Doc{ID: 1}}}, got)

	for _, tc := range []struct {
		name string
		typ  byte
		rec  []byte
		want string
	}{
		{"unknown type", 3, rec, "unknown record type 3"},
		{"empty", recOps, nil, "bad op count"},
		{"count above the bytes", recOps, []byte{100}, "bad op count"},
		{"cut in the last op", recOps, rec[:len(rec)-3], "truncated"},
		{"bytes after the last op", recOps, append(encodeOps(docs[:1], nil), 0), "1 bytes after"},
		{"unknown op kind", recOps, []byte{1, 9, 0, 0, 0, 0, 0, 0, 0, 1}, "unknown kind 9"},
		{"name longer than MaxName", recOps, encodeOps([]Doc{{ID: 1, Name: strings.Repeat("n", MaxName+1)}}, nil), "bad name"},
	} {
		var calls int
		err := decodeRecord(tc.typ, tc.rec, func(bool, Doc) { calls++ })
		require.ErrorContains(t, err, tc.want, tc.name)
		require.Zero(t, calls, "%s: no op of a damaged record is applied", tc.name)
	}
}

// FuzzDecodeRecord: any payload decodes or fails before applying an op,
// never a panic; the ops that decode, encoded again (inserts first, as the
// engine writes them), decode to the same inserts and deletes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeOps([]Doc{{ID: 1, Fingerprint: 2, Name: "a"}}, []uint64{3}))
	f.Add(encodeOps(nil, nil))
	f.Add([]byte{2, 1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, err := decodeAll(recOps, b)
		if err != nil {
			require.Empty(t, ops)
			return
		}
		var docs []Doc
		var dels []uint64
		var want []op
		for _, o := range ops {
			if o.del {
				dels = append(dels, o.doc.ID)
			} else {
				docs = append(docs, o.doc)
				want = append(want, o)
			}
		}
		for _, id := range dels {
			want = append(want, op{true, Doc{ID: id}})
		}
		got, err := decodeAll(recOps, encodeOps(docs, dels))
		require.NoError(t, err)
		require.Equal(t, want, got)
	})
}
