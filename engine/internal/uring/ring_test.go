//go:build linux

package uring

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// newRing returns a ring, or skips the test where the kernel refuses one.
// Unless nowait, every read goes through the ring, even one the page
// cache could answer at once.
func newRing(t *testing.T, entries int, nowait bool) *Ring {
	t.Helper()
	r, err := New(entries)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("no io_uring here: %v", err)
	}
	require.NoError(t, err)
	r.noNowait.Store(!nowait)
	return r
}

// patterned writes a file whose every 8 bytes hold their own offset.
func patterned(t *testing.T, size int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, size)
	for i := 0; i+8 <= size; i += 8 {
		binary.LittleEndian.PutUint64(data[i:], uint64(i))
	}
	p := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	f, err := os.Open(p)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f, data
}

func TestLayout(t *testing.T) {
	require.EqualValues(t, 64, unsafe.Sizeof(sqe{}))
	require.EqualValues(t, 16, unsafe.Sizeof(cqe{}))
	require.EqualValues(t, 120, unsafe.Sizeof(params{}))
}

// TestReadAt checks reads against the file's bytes as os.File.ReadAt
// gives them: anywhere, of any length, across and past the end.
func TestReadAt(t *testing.T) {
	t.Run("ring", func(t *testing.T) { testReadAt(t, false) })
	t.Run("page cache first", func(t *testing.T) { testReadAt(t, true) })
}

func testReadAt(t *testing.T, nowait bool) {
	r := newRing(t, 8, nowait)
	defer r.Close()
	const size = 1<<20 + 123
	f, data := patterned(t, size)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 500 {
		if i%10 == 0 { // from the disk again: RWF_NOWAIT finds nothing
			require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
		}
		off := rng.Int64N(size + 10)
		p := make([]byte, rng.IntN(70_000))
		want := make([]byte, len(p))
		wn, werr := f.ReadAt(want, off)
		n, err := r.ReadAt(f.Fd(), p, off)
		require.Equal(t, wn, n, "read of %d at %d", len(p), off)
		require.Equal(t, werr, err, "read of %d at %d", len(p), off)
		require.Equal(t, want[:wn], p[:n])
		if n > 0 {
			require.Equal(t, data[off:off+int64(n)], p[:n])
		}
	}
	_, err := r.ReadAt(^uintptr(0)>>1, make([]byte, 10), 0)
	require.Error(t, err, "a bad descriptor")
}

// TestConcurrent reads from many goroutines at once, more than the ring
// holds, and closes the ring while others still try.
func TestConcurrent(t *testing.T) {
	t.Run("ring", func(t *testing.T) { testConcurrent(t, false) })
	t.Run("page cache first", func(t *testing.T) { testConcurrent(t, true) })
}

func testConcurrent(t *testing.T, nowait bool) {
	r := newRing(t, 4, nowait)
	const size = 4 << 20
	f, data := patterned(t, size)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			p := make([]byte, 4096)
			for range 300 {
				off := rng.Int64N(size - 4096)
				n, err := r.ReadAt(f.Fd(), p, off)
				if err != nil || n != len(p) || string(p) != string(data[off:off+4096]) {
					t.Errorf("read at %d: %d, %v", off, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var late sync.WaitGroup
	for range 8 {
		late.Add(1)
		go func() {
			defer late.Done()
			p := make([]byte, 10)
			for {
				if _, err := r.ReadAt(f.Fd(), p, 0); err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("after close: %v", err)
					}
					return
				}
			}
		}()
	}
	require.NoError(t, r.Close())
	late.Wait()
	_, err := r.ReadAt(f.Fd(), make([]byte, 1), 0)
	require.ErrorIs(t, err, ErrClosed)
}

// TestReadAtDisk: a read the page cache holds (a file just written) says
// so when the ring may look there first, and a read sent through the ring
// says it went to the disk.
func TestReadAtDisk(t *testing.T) {
	f, data := patterned(t, 64<<10)
	for _, nowait := range []bool{true, false} {
		r := newRing(t, 8, nowait)
		buf := make([]byte, 4096)
		n, disk, err := r.ReadAtDisk(f.Fd(), buf, 8192)
		require.NoError(t, err)
		require.Equal(t, len(buf), n)
		require.Equal(t, data[8192:8192+4096], buf)
		if !r.noNowait.Load() { // the kernel takes RWF_NOWAIT
			require.Equal(t, !nowait, disk, "nowait %v", nowait)
		} else {
			require.True(t, disk)
		}
		require.NoError(t, r.Close())
	}
}
