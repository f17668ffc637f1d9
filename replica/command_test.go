package replica

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
)

func TestCommandRoundTrip(t *testing.T) {
	sim := 0.7
	for _, c := range []command{
		{commit: engine.Commit{Insert: []engine.Doc{{ID: 1, Fingerprint: 0xffffffffffffffff, Name: "a"}, {ID: 2}}, Delete: []uint64{3, 4}}},
		{commit: engine.Commit{Delete: []uint64{0}}},
		{commit: engine.Commit{Insert: []engine.Doc{{ID: 5, Fingerprint: 9, Sketch: "0123"}}}, ifNew: true, k: 3},
		{commit: engine.Commit{Insert: []engine.Doc{{ID: 6}}}, ifNew: true, k: 6, similarity: &sim},
		{commit: engine.Commit{Insert: []engine.Doc{{ID: 7}}}, ifNew: true, k: 3, shards: 4},
		{setting: &setting{name: "text.schema", value: []byte(`{"v":1}`)}},
	} {
		b, err := encodeCommand(c)
		require.NoError(t, err)
		got, err := decodeCommand(b)
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	for _, b := range [][]byte{{}, {0xff}, {0x12, 0x00}} {
		_, err := decodeCommand(b)
		assert.Error(t, err, "%x", b)
	}
}

// FuzzDecodeCommand: any bytes in the stream decode to a command or an
// error, never a panic, and a command decoded encodes to one equal to it.
func FuzzDecodeCommand(f *testing.F) {
	sim := 0.5
	for _, c := range []command{
		{commit: engine.Commit{Insert: []engine.Doc{{ID: 1, Fingerprint: 2, Name: "x"}}, Delete: []uint64{7}}},
		{commit: engine.Commit{Insert: []engine.Doc{{ID: 3, Sketch: "ab"}}}, ifNew: true, k: 3, similarity: &sim},
	} {
		b, err := encodeCommand(c)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCommand(b)
		if err != nil {
			return
		}
		again, err := encodeCommand(c)
		require.NoError(t, err)
		d, err := decodeCommand(again)
		require.NoError(t, err)
		assert.Equal(t, c, d)
	})
}

func TestVoteRoundTrip(t *testing.T) {
	ms := []engine.Match{{Doc: engine.Doc{ID: 1, Fingerprint: 2, Name: "a"}, Distance: 1}, {Doc: engine.Doc{ID: 3, Fingerprint: 4}, Distance: 3}}
	for _, v := range []vote{
		{matches: []engine.Match{}},
		{matches: ms, count: 2},
		{verified: []textindex.Match{{Match: ms[0], Similarity: 0.75}}, count: 1},
		{matches: []engine.Match{}, refused: "engine: distance above K"},
	} {
		b, err := encodeVote(v, 1<<20)
		require.NoError(t, err)
		got, err := decodeVote(b, v.verified != nil)
		require.NoError(t, err)
		assert.Equal(t, v, got)
	}
	// A vote larger than a message holds the nearest matches and their
	// count.
	var many []engine.Match
	for i := range 1000 {
		many = append(many, engine.Match{Doc: engine.Doc{ID: uint64(i), Name: strings.Repeat("n", 100)}, Distance: i % 4})
	}
	b, err := encodeVote(vote{matches: many, count: len(many)}, 10_000)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), 10_000)
	got, err := decodeVote(b, false)
	require.NoError(t, err)
	assert.Equal(t, 1000, got.count)
	assert.NotEmpty(t, got.matches)
	assert.Equal(t, many[:len(got.matches)], got.matches)
	_, err = decodeVote([]byte{0xff}, false)
	assert.ErrorContains(t, err, "not a vote")
}

// FuzzDecodeVote: any bytes on a vote's subject decode to a vote or an
// error, never a panic, and a vote decoded encodes to one equal to it.
func FuzzDecodeVote(f *testing.F) {
	for _, v := range []vote{
		{matches: []engine.Match{{Doc: engine.Doc{ID: 1, Fingerprint: 2, Name: "x"}, Distance: 2}}, count: 1},
		{verified: []textindex.Match{{Match: engine.Match{Doc: engine.Doc{ID: 3, Sketch: "ab"}}, Similarity: 0.9}}, count: 4},
		{refused: "no"},
	} {
		b, err := encodeVote(v, 1<<20)
		require.NoError(f, err)
		f.Add(b, v.verified != nil)
	}
	f.Fuzz(func(t *testing.T, b []byte, verified bool) {
		v, err := decodeVote(b, verified)
		if err != nil {
			return
		}
		again, err := encodeVote(v, 1<<30)
		require.NoError(t, err)
		w, err := decodeVote(again, verified)
		require.NoError(t, err)
		assert.Equal(t, v, w)
	})
}

func TestTally(t *testing.T) {
	near := func(id uint64, d int) engine.Match { return engine.Match{Doc: engine.Doc{ID: id}, Distance: d} }
	r := tally(map[int]vote{0: {matches: []engine.Match{}}, 1: {matches: []engine.Match{}}})
	assert.True(t, r.inserted)
	assert.NoError(t, r.err)
	r = tally(map[int]vote{0: {matches: []engine.Match{near(5, 2)}, count: 1}, 1: {matches: []engine.Match{near(9, 1), near(2, 2)}, count: 2}})
	assert.False(t, r.inserted)
	assert.Equal(t, []engine.Match{near(9, 1), near(2, 2), near(5, 2)}, r.matches, "nearest first, then by id")
	// A vote whose near-duplicates did not fit in its message still keeps
	// the document out.
	r = tally(map[int]vote{0: {matches: []engine.Match{}}, 1: {matches: []engine.Match{}, count: 3}})
	assert.False(t, r.inserted)
	r = tally(map[int]vote{0: {matches: []engine.Match{}}, 2: {refused: "k 9 above K 3"}})
	require.ErrorIs(t, r.err, engine.ErrInput)
	assert.ErrorContains(t, r.err, "shard 2 refused it: k 9 above K 3")
	v := tally(map[int]vote{0: {verified: []textindex.Match{{Match: near(1, 3), Similarity: 0.8}}, count: 1}, 1: {verified: []textindex.Match{{Match: near(2, 1), Similarity: 0.9}}, count: 1}})
	assert.Equal(t, []uint64{2, 1}, []uint64{v.verified[0].ID, v.verified[1].ID}, "most similar first")
}
