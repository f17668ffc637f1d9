package store

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/uring"
	"github.com/simhashdb/simhashdb/internal/directio"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedFile is a file whose reads return when told to.
type gatedFile struct {
	vfs.File
	started chan struct{}
	release chan struct{}
}

func (f gatedFile) ReadAt(p []byte, off int64) (int, error) {
	f.started <- struct{}{}
	<-f.release
	return len(p), nil
}

// TestReadRounds checks the count of rounds: reads issued together are
// one, however they finish; a read issued after another came back starts
// the next; reads one after another are one round each.
func TestReadRounds(t *testing.T) {
	var c readCount
	g := gatedFile{started: make(chan struct{}), release: make(chan struct{})}
	f := readFile{File: g, reads: &c}
	read := func(wg *sync.WaitGroup) {
		defer wg.Done()
		_, err := f.ReadAt(make([]byte, 1), 0)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for range 3 { // together: all three start before any returns
		wg.Add(1)
		go read(&wg)
		<-g.started
	}
	for range 3 {
		g.release <- struct{}{}
	}
	wg.Wait()
	require.Equal(t, int64(3), c.reads.Load())
	require.Equal(t, int64(1), c.rounds.Load())

	// Two more together, after those came back: the next round.
	wg.Add(2)
	go read(&wg)
	<-g.started
	go read(&wg)
	<-g.started
	g.release <- struct{}{}
	g.release <- struct{}{}
	wg.Wait()
	require.Equal(t, int64(2), c.rounds.Load())
	for range 2 { // one after another
		wg.Add(1)
		go read(&wg)
		<-g.started
		g.release <- struct{}{}
		wg.Wait()
	}
	require.Equal(t, int64(4), c.rounds.Load())
	require.Equal(t, int64(7), c.reads.Load())
}

// TestSequentialOpensBuffered: with direct reads, an sstable opened for
// random reads (a query's) reads with O_DIRECT, one opened for sequential
// reads (a compaction's inputs) through the page cache and its read-ahead;
// both read the file's bytes.
func TestSequentialOpensBuffered(t *testing.T) {
	ring := newRing(t)
	dir := t.TempDir()
	name := filepath.Join(dir, "000001.sst")
	want := make([]byte, 3*directio.Align)
	for i := range want {
		want[i] = byte(i * 7)
	}
	require.NoError(t, os.WriteFile(name, want, 0o644))
	if dfd, err := uring.OpenDirect(name); err != nil {
		t.Skipf("no O_DIRECT in the temporary folder's file system: %v", err)
	} else {
		require.NoError(t, uring.CloseDirect(dfd))
	}
	fs := readFS{FS: vfs.Default, ring: ring, reads: new(readCount), direct: true}
	for _, c := range []struct {
		name   string
		opts   []vfs.OpenOption
		direct bool
	}{
		{"no option", nil, true},
		{"random reads", []vfs.OpenOption{vfs.RandomReadsOption}, true},
		{"sequential reads", []vfs.OpenOption{vfs.SequentialReadsOption}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := fs.Open(name, c.opts...)
			require.NoError(t, err)
			defer f.Close()
			assert.Equal(t, c.direct, f.(readFile).dfd != vfs.InvalidFd, "read with O_DIRECT")
			got := make([]byte, 100)
			_, err = f.ReadAt(got, directio.Align-50)
			require.NoError(t, err)
			assert.Equal(t, want[directio.Align-50:directio.Align+50], got)
		})
	}
}
