package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/stretchr/testify/require"
)

func TestDocRoundTrip(t *testing.T) {
	for _, d := range []engine.Doc{
		{ID: 0, Fingerprint: 0},
		{ID: ^uint64(0), Fingerprint: ^uint64(0), Name: "https://example.com/a b"},
		{ID: 7, Fingerprint: 0x0123456789abcdef, Name: "x", Sketch: "\x00\x01\xfe\xff"},
	} {
		b, err := json.Marshal(DocOf(d))
		require.NoError(t, err)
		var j Doc
		require.NoError(t, json.Unmarshal(b, &j))
		got, err := j.Engine()
		require.NoError(t, err)
		require.Equal(t, d, got, "%s", b)
	}
}

func TestDocErrors(t *testing.T) {
	for _, tc := range []struct {
		doc  Doc
		want string
	}{
		{Doc{ID: 3, FP: "0xzz"}, "document 3: "},
		{Doc{ID: 4, FP: "0x1", Sketch: "abc"}, "document 4: sketch \"abc\": want hexadecimal digits"},
	} {
		_, err := tc.doc.Engine()
		require.ErrorContains(t, err, tc.want)
	}
}

func TestMatchDropsSketch(t *testing.T) {
	sim := 0.75
	m := MatchOf(engine.Match{Doc: engine.Doc{ID: 1, Fingerprint: 2, Sketch: "ab"}, Distance: 3}, &sim)
	require.Empty(t, m.Sketch)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":1,"name":"","fp":"0x0000000000000002","distance":3,"similarity":0.75}`, string(b))
}

// FuzzDoc: a document read from the network is refused with an error or
// converted, and converted back it reads the same.
func FuzzDoc(f *testing.F) {
	f.Add([]byte(`{"id":1,"name":"a","fp":"0x0123456789abcdef"}`))
	f.Add([]byte(`{"id":2,"fp":"18446744073709551615","sketch":"00ff"}`))
	f.Add([]byte(`{"id":3,"fp":"0x","sketch":"0"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var j Doc
		if json.Unmarshal(b, &j) != nil {
			return
		}
		d, err := j.Engine()
		if err != nil {
			return
		}
		back, err := DocOf(d).Engine()
		require.NoError(t, err)
		require.Equal(t, d, back)
	})
}

// TestStatsPartial: figures an index could not give cross the wire as
// the fields named and the reason, and come back an *engine.StatsError;
// whole statistics come back without one, and another error is refused.
func TestStatsPartial(t *testing.T) {
	st := engine.Stats{Documents: 12, TableBytes: 345}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"whole", nil},
		{"partial", &engine.StatsError{Fields: []string{"PebbleIndexBytes", "CacheForIndex"}, Err: fmt.Errorf("%w: sstable 000004: footer", engine.ErrCorrupt)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := StatsOf(st, nil, tc.err)
			require.NoError(t, err)
			b, err := json.Marshal(out)
			require.NoError(t, err)
			var back Stats
			require.NoError(t, json.Unmarshal(b, &back))
			require.Equal(t, st, back.Stats)
			if tc.err == nil {
				require.NoError(t, back.Err())
				require.NotContains(t, string(b), "unmeasured")
				return
			}
			se, ok := errors.AsType[*engine.StatsError](back.Err())
			require.True(t, ok)
			require.Equal(t, []string{"PebbleIndexBytes", "CacheForIndex"}, se.Fields)
			require.Contains(t, se.Error(), "sstable 000004: footer")
		})
	}
	_, err := StatsOf(st, nil, engine.ErrClosed)
	require.ErrorIs(t, err, engine.ErrClosed)
}

// TestStatsDesignRoundTrip: the design crosses the wire whole (a served
// index's stats describe its tables as a local one's do), and one that
// does not decode is a figure unmeasured, named, not a silent nil.
func TestStatsDesignRoundTrip(t *testing.T) {
	d, err := permutation.ForCandidates(6, 1<<20)
	require.NoError(t, err)
	m := StatsProto(Stats{Stats: engine.Stats{K: 6, ExactWithin: d.ExactWithin(), Design: d}})
	got := StatsFromProto(m)
	require.NoError(t, got.Err())
	require.Equal(t, d, got.Design)
	require.Equal(t, 5, got.ExactWithin)
	m.Design = m.Design[:len(m.Design)/2]
	got = StatsFromProto(m)
	require.Nil(t, got.Design)
	require.Equal(t, []string{"design"}, got.Unmeasured)
	require.ErrorContains(t, got.Err(), "the design: ")
}

// TestStatsRoundTrip: every figure of the engine's Stats crosses the wire
// (a field added to Stats and forgotten in StatsProto or StatsFromProto
// fails here), each set to a value of its own.
func TestStatsRoundTrip(t *testing.T) {
	var es engine.Stats
	v := reflect.ValueOf(&es).Elem()
	for i := range v.NumField() {
		f, n := v.Field(i), i+1
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(n))
		case reflect.Uint32, reflect.Uint64:
			f.SetUint(uint64(n))
		case reflect.Float64:
			f.SetFloat(float64(n) + 0.5)
		case reflect.Bool:
			f.SetBool(true)
		}
	}
	es.Tables = []engine.TableStats{{Prefix: 3, Layout: "x", Blocks: 4, Bytes: 5, Codes: 6, Pending: 7}}
	es.BlockVersions = map[string]int{"v2": 8}
	got := StatsFromProto(StatsProto(Stats{Stats: es}))
	require.NoError(t, got.Err())
	require.Equal(t, es, got.Stats)
}
