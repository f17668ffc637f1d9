package store

import (
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
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
