package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/engine"
)

// TestSpooled: the records go to insert in runs of n, in order, once the
// input ends; an input that fails part way sends nothing; either way the
// temporary file is removed.
func TestSpooled(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var want []engine.Doc
	for i := range 10_007 {
		d := engine.Doc{ID: uint64(i) * 3, Fingerprint: uint64(i) * 0x9e3779b97f4a7c15, Name: strings.Repeat("n\n\x00", i%4)}
		if i%2 == 0 {
			d.Sketch = strings.Repeat("\xff", 32)
		}
		want = append(want, d)
	}
	seq := func(failAt int) func(yield func(engine.Doc, error) bool) {
		return func(yield func(engine.Doc, error) bool) {
			for i, d := range want {
				if i == failAt {
					yield(engine.Doc{}, errors.New("input.txt:7: read failed"))
					return
				}
				if !yield(d, nil) {
					return
				}
			}
		}
	}
	for _, c := range []struct {
		name   string
		failAt int
		runs   []int
	}{
		{"whole", -1, []int{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 7}},
		{"fails at the first", 0, nil},
		{"fails at the last", len(want) - 1, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []engine.Doc
			var runs []int
			err := spooled(context.Background(), seq(c.failAt), 1000, func(_ context.Context, run []engine.Doc) error {
				runs = append(runs, len(run))
				got = append(got, run...)
				return nil
			})
			if c.failAt >= 0 {
				require.ErrorContains(t, err, "input.txt:7: read failed")
				assert.Empty(t, got, "nothing sent")
			} else {
				require.NoError(t, err)
				assert.Equal(t, want, got)
			}
			assert.Equal(t, c.runs, runs)
			left, err := os.ReadDir(os.Getenv("TMPDIR"))
			require.NoError(t, err)
			assert.Empty(t, left, "the temporary file is removed")
		})
	}
	t.Run("insert fails", func(t *testing.T) {
		err := spooled(context.Background(), seq(-1), 1000, func(context.Context, []engine.Doc) error { return errors.New("server: 503") })
		require.ErrorContains(t, err, "server: 503")
	})
	t.Run("no room for the file", func(t *testing.T) {
		t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
		err := spooled(context.Background(), seq(-1), 1000, func(context.Context, []engine.Doc) error { return nil })
		require.ErrorContains(t, err, "a file to hold the records until the input ends")
	})
}
