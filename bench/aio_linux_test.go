package bench

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAIORound checks that a round of asynchronous reads fills each
// buffer with the block it asked for: every block of the file starts with
// its own offset and repeats it.
func TestAIORound(t *testing.T) {
	dir := t.TempDir()
	if !directIOWorks(t, dir) {
		t.Skip("no O_DIRECT reads in the temporary folder's file system")
	}
	const blocks = 256
	data := make([]byte, blocks*directBlock)
	for b := range blocks {
		for i := 0; i < directBlock; i += 8 {
			binary.LittleEndian.PutUint64(data[b*directBlock+i:], uint64(b*directBlock))
		}
	}
	p := filepath.Join(dir, "blocks")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	const n = 10
	r, err := newDirectReader([]string{p}, n)
	require.NoError(t, err)
	defer r.Close()
	a, err := newAIOReader(r)
	require.NoError(t, err)
	defer a.Close()
	rngs := make([]*rand.Rand, n)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(uint64(i), 3))
	}
	seen := map[uint64]bool{}
	for range 20 {
		for i := range r.bufs {
			clear(r.bufs[i])
		}
		require.NoError(t, a.round(rngs, n))
		for i, buf := range r.bufs[:n] {
			off := binary.LittleEndian.Uint64(buf)
			require.Zero(t, off%directBlock, "buffer %d", i)
			require.Equal(t, data[off:off+directBlock], buf, "buffer %d holds the block at %d", i, off)
			seen[off] = true
		}
	}
	require.Greater(t, len(seen), 20, "the rounds read different blocks")
}
