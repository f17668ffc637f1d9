package units

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/vfs"
	"github.com/stretchr/testify/require"
)

// TestRead checks a unit read from the store: every posting of the unit
// and none of its neighbours', names kept, cached after the first read,
// and a unit of more than max postings told apart (and cached as such).
func TestRead(t *testing.T) {
	s, err := store.Open(t.TempDir(), store.Options{FS: vfs.Default, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, NewOrder: store.KeyOrder})
	require.NoError(t, err)
	defer s.Close()
	const docs = 64 * 2 // two unit bits: units are the top two bits
	d := New(docs, 5)
	require.Equal(t, uint(62), d.Shift())
	type posting struct {
		fp, id uint64
		name   string
	}
	// Unit 1 has three fingerprints, one with two documents; unit 2 has
	// six postings, more than max; units 0 and 3 one each.
	want := []posting{{0, 1, ""}, {1 << 62, 2, "a"}, {1<<62 | 5, 3, ""}, {1<<62 | 5, 4, "bb"}, {1<<62 | 9, 5, "c"}}
	for i := range 6 {
		want = append(want, posting{2<<62 | uint64(i), uint64(10 + i), fmt.Sprint(i)})
	}
	want = append(want, posting{^uint64(0), 20, "z"})
	b := s.NewBatch()
	for _, p := range want {
		require.NoError(t, b.Set(format.PostingKey(p.fp, p.id), []byte(p.name)))
	}
	require.NoError(t, s.Commit(context.Background(), s.BatchWrites(b)))
	require.NoError(t, b.Close())
	lo, hi := format.SpaceBounds(format.SpacePostings)
	it, err := s.NewIter(store.IterOptions{Lower: lo, Upper: hi})
	require.NoError(t, err)
	defer it.Close()
	c := cache.New(1 << 20)
	for range 2 { // read, then cached
		e, ok, err := d.Read(c, it, 1<<62|5)
		require.NoError(t, err)
		require.True(t, ok)
		var got []posting
		for i := range e.Packed.Len() {
			got = append(got, posting{e.Packed.At(i), e.Packed.ID(i), e.Name(i)})
		}
		require.Equal(t, want[1:5], got)
		require.NotNil(t, c.Load(d.Slot(1)), "unit 1 cached")
	}
	e, ok, err := d.Read(c, it, 2<<62)
	require.NoError(t, err)
	require.False(t, ok, "unit 2 holds more than max postings")
	require.Nil(t, e)
	require.True(t, c.Load(d.Slot(2)).Big)
	_, ok, err = d.Read(c, it, 2<<62|3)
	require.NoError(t, err)
	require.False(t, ok, "a big unit stays big")
}
