package store

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// recorder keeps what a Writes gives it.
type recorder struct{ ops []string }

func (r *recorder) Set(k, v []byte) error {
	r.ops = append(r.ops, fmt.Sprintf("set %s=%s", k, v))
	return nil
}
func (r *recorder) Delete(k []byte) error {
	r.ops = append(r.ops, fmt.Sprintf("del %s", k))
	return nil
}
func (r *recorder) Merge(k, v []byte) error {
	r.ops = append(r.ops, fmt.Sprintf("merge %s=%s", k, v))
	return nil
}

func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), Options{FS: vfs.Default, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestBatchWrites checks that a batch's writes reach an sstable in key
// order, a key's last write only, whether the batch was in order or not,
// and that a merge after another write of its key is refused.
func TestBatchWrites(t *testing.T) {
	s := openStore(t)
	for _, tc := range []struct {
		name  string
		write func(b *Batch)
		want  []string
		err   string
	}{
		{"in order", func(b *Batch) {
			b.Set([]byte("\x01a"), []byte("1"))
			b.Delete([]byte("\x01b"))
			b.Merge([]byte("\x01c"), []byte("3"))
		}, []string{"set \x01a=1", "del \x01b", "merge \x01c=3"}, ""},
		{"out of order, a key twice", func(b *Batch) {
			b.Set([]byte("\x01c"), []byte("old"))
			b.Set([]byte("\x01a"), []byte("1"))
			b.Delete([]byte("\x01c"))
			b.Set([]byte("\x01c"), []byte("new"))
			b.Delete([]byte("\x01b"))
		}, []string{"set \x01a=1", "del \x01b", "set \x01c=new"}, ""},
		{"a merge after a set", func(b *Batch) {
			b.Set([]byte("\x01a"), []byte("1"))
			b.Merge([]byte("\x01a"), []byte("2"))
		}, nil, "merges into key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := s.NewBatch()
			defer b.Close()
			tc.write(b)
			var r recorder
			err := s.BatchWrites(b).Each(&r)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, r.ops)
		})
	}
}

// TestCommitStreams checks that Commit writes runs given as functions
// with batches, in one sstable that Pebble then reads, and refuses runs
// out of key order without ingesting anything.
func TestCommitStreams(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	b := s.NewBatch()
	defer b.Close()
	require.NoError(t, b.Set([]byte("\x01a"), []byte("batch")))
	stream := Writes{Size: 10, Each: func(w Writer) error {
		for _, k := range []string{"\x02a", "\x02b"} {
			if err := w.Set([]byte(k), []byte("stream")); err != nil {
				return err
			}
		}
		return nil
	}}
	require.NoError(t, s.Commit(ctx, s.BatchWrites(b), stream))
	for k, want := range map[string]string{"\x01a": "batch", "\x02a": "stream", "\x02b": "stream"} {
		v, c, err := s.Get([]byte(k))
		require.NoError(t, err, "%q", k)
		require.Equal(t, want, string(v))
		c.Close()
	}
	late := s.NewBatch()
	defer late.Close()
	require.NoError(t, late.Set([]byte("\x02c"), []byte("late")))
	err := s.Commit(ctx, stream, s.BatchWrites(late), s.BatchWrites(b)) // 0x02 keys before 0x01
	require.ErrorContains(t, err, "strictly increasing")
	_, c, err := s.Get([]byte("\x02c"))
	require.ErrorIs(t, err, ErrKeyNotFound)
	require.Nil(t, c)
}
