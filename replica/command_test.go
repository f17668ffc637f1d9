package replica

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/engine"
)

func TestCommandRoundTrip(t *testing.T) {
	sim := 0.7
	for _, c := range []command{
		{commit: engine.Commit{Insert: []engine.Doc{{ID: 1, Fingerprint: 0xffffffffffffffff, Name: "a"}, {ID: 2}}, Delete: []uint64{3, 4}}},
		{commit: engine.Commit{Delete: []uint64{0}}},
		{commit: engine.Commit{Insert: []engine.Doc{{ID: 5, Fingerprint: 9, Sketch: "0123"}}}, ifNew: true, k: 3},
		{commit: engine.Commit{Insert: []engine.Doc{{ID: 6}}}, ifNew: true, k: 6, similarity: &sim},
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
