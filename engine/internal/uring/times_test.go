//go:build linux

package uring

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestTimes checks that a ring counts its submissions and the time in
// them, and the time it waited for a read that had not finished.
func TestTimes(t *testing.T) {
	var nilRing *Ring
	require.Equal(t, Times{}, nilRing.Times())
	r := newRing(t, 8, false)
	defer r.Close()
	base := r.Times() // New's read of a pipe, to try the ring
	f, data := patterned(t, 1<<16)
	for i := range 10 {
		p := make([]byte, 4096)
		n, err := r.ReadAt(f.Fd(), p, int64(i)*4096)
		require.NoError(t, err)
		require.Equal(t, data[i*4096:][:4096], p[:n])
	}
	got := r.Times()
	require.GreaterOrEqual(t, got.Submits-base.Submits, int64(10), "a submission for each read at least")
	require.Greater(t, got.Submit, base.Submit)

	// A read of an empty pipe finishes once the test writes to it: after
	// its submission, while the reader waits, unless the write wins the
	// race to the reader's look at the completions, so the test tries
	// until a read waited.
	for try := 0; r.Times().Wait == base.Wait; try++ {
		require.Less(t, try, 1000, "no read waited for its completion")
		var fds [2]int
		require.NoError(t, unix.Pipe2(fds[:], unix.O_CLOEXEC))
		before := r.Times().Submits
		done := make(chan error, 1)
		go func() {
			_, err := r.ReadAt(uintptr(fds[0]), make([]byte, 1), -1)
			done <- err
		}()
		for r.Times().Submits == before {
			runtime.Gosched()
		}
		_, err := unix.Write(fds[1], []byte{1})
		require.NoError(t, err)
		require.NoError(t, <-done)
		unix.Close(fds[0])
		unix.Close(fds[1])
	}
}
