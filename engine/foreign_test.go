package engine

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// treeSum is every file under dir with a digest of its bytes.
func treeSum(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = sha256.Sum256(b)
		return err
	}))
	return out
}

// TestForeignFolders: Open refuses a folder that is neither empty nor a
// simhashdb index with ErrNotIndex, and writes not a byte into it.
func TestForeignFolders(t *testing.T) {
	t.Parallel()
	foreignStore := func(cmp *pebble.Comparer) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			o := &pebble.Options{Comparer: cmp}
			db, err := pebble.Open(filepath.Join(dir, store.Dir), o)
			require.NoError(t, err)
			for _, k := range []string{"a", "b", "c"} {
				require.NoError(t, db.Set([]byte(k), []byte("their data"), pebble.Sync))
			}
			require.NoError(t, db.Flush())
			require.NoError(t, db.Set([]byte("d"), []byte("unflushed"), pebble.Sync))
			require.NoError(t, db.Close())
		}
	}
	custom := *pebble.DefaultComparer
	custom.Name = "their.order"
	for name, make := range map[string]func(t *testing.T, dir string){
		"another program's Pebble store":  foreignStore(pebble.DefaultComparer),
		"a Pebble store of another order": foreignStore(&custom),
		"pebble/ holding other files": func(t *testing.T, dir string) {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, store.Dir), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, store.Dir, "000001.sst"), []byte("not a table"), 0o644))
		},
		"a stray wal/": func(t *testing.T, dir string) {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, walDir), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, walDir, "000001.wal"), []byte("their log"), 0o644))
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			make(t, dir)
			before := treeSum(t, dir)
			for _, ro := range []bool{false, true} {
				_, err := Open(dir, Options{ReadOnly: ro})
				require.ErrorIs(t, err, ErrNotIndex, "read-only %v", ro)
				assert.Equal(t, before, treeSum(t, dir), "not a byte written")
			}
		})
	}
	t.Run("a file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "afile")
		require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
		_, err := Open(f, Options{})
		require.ErrorIs(t, err, ErrNotIndex)
		assert.Contains(t, err.Error(), "not a folder")
	})
}

// TestOpenWhereMakingStopped: an index folder whose making stopped before
// Pebble wrote a file (an empty pebble/) is made into an index by a
// writable open, not refused: nothing there can be lost.
func TestOpenWhereMakingStopped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, store.Dir), 0o755))
	db, err := Open(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, db.Insert(ctx, Doc{ID: 1, Fingerprint: 7}))
	require.NoError(t, db.Close())
	db, err = Open(dir, Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Get(ctx, 1)
	require.NoError(t, err)
}
