package store

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// BenchmarkGetMany measures the processor's part of a cold query's reads
// through the block map: GetMany of 8 keys of about a kilobyte, a table
// block's size, in runs of two neighbours (a probe's range often spans
// two table blocks), from a read-only store whose file the page cache
// holds, so that the ring's reads cost a copy rather than the disk.
func BenchmarkGetMany(b *testing.B) {
	ring := newRing(b)
	dir := b.TempDir()
	s, err := Open(dir, Options{FS: vfs.Default, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, NewOrder: KeyOrder})
	require.NoError(b, err)
	const n = 1 << 16
	r := rand.New(rand.NewPCG(9, 9))
	l, err := s.NewLoad(n << 11)
	require.NoError(b, err)
	w, err := l.Create("tables")
	require.NoError(b, err)
	v := make([]byte, 1100)
	for i := range n {
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		require.NoError(b, w.Set(fmt.Appendf(nil, "\x04%08d", i), v[:900+r.IntN(200)]))
	}
	require.NoError(b, w.Close())
	require.NoError(b, l.Ingest(context.Background()))
	require.NoError(b, l.Close())
	require.NoError(b, s.Close())

	s, err = Open(dir, Options{FS: vfs.Default, ReadOnly: true, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, Ring: ring})
	require.NoError(b, err)
	defer s.Close()
	snap := s.NewSnapshot()
	defer snap.Close()
	keys := make([][]byte, 8)
	got := 0
	read := func(int, []byte) error { got++; return nil }
	for range n / 8 { // every page once: the page cache holds them
		k := r.IntN(n - 1)
		_, err := snap.GetMany([][]byte{fmt.Appendf(nil, "\x04%08d", k)}, read)
		require.NoError(b, err)
	}
	got = 0
	for b.Loop() {
		for i := 0; i < len(keys); i += 2 {
			k := r.IntN(n - 1)
			keys[i], keys[i+1] = fmt.Appendf(keys[i][:0], "\x04%08d", k), fmt.Appendf(keys[i+1][:0], "\x04%08d", k+1)
		}
		if _, err := snap.GetMany(keys, read); err != nil {
			b.Fatal(err)
		}
	}
	require.Equal(b, b.N*len(keys), got, "every key read by the map")
}
