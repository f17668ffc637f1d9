//go:build linux

package uring

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/simhashdb/simhashdb/internal/directio"
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
	require.NoError(t, f.Sync(), "written back, so that FADV_DONTNEED can drop its pages")
	return f, data
}

func TestLayout(t *testing.T) {
	require.EqualValues(t, 64, unsafe.Sizeof(sqe{}))
	require.EqualValues(t, 16, unsafe.Sizeof(cqe{}))
	require.EqualValues(t, 120, unsafe.Sizeof(params{}))
}

// TestReadAt checks reads against the file's bytes as os.File.ReadAt
// gives them: anywhere, of any length, across and past the end.
// ways are the ways of reading through a ring a test tries: every read
// through the ring, the page cache first (RWF_NOWAIT), and ReadAtDirect.
var ways = []string{"ring", "page cache first", "direct"}

// eachWay runs test as a subtest for each of ways.
func eachWay(t *testing.T, test func(t *testing.T, way string)) {
	for _, way := range ways {
		t.Run(way, func(t *testing.T) { test(t, way) })
	}
}

// reader returns a ring and a function reading f through it the given way,
// or skips the test where this system cannot.
func reader(t *testing.T, entries int, way string, f *os.File) (*Ring, func([]byte, int64) (int, error)) {
	t.Helper()
	r := newRing(t, entries, way == "page cache first")
	if way != "direct" {
		return r, func(p []byte, off int64) (int, error) { return r.ReadAt(f.Fd(), p, off) }
	}
	dfd, err := OpenDirect(f.Name())
	if errors.Is(err, syscall.EINVAL) {
		r.Close()
		t.Skipf("no O_DIRECT on this file system: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { CloseDirect(dfd) })
	return r, func(p []byte, off int64) (int, error) {
		n, _, err := r.ReadAtDirect(f.Fd(), dfd, p, off)
		return n, err
	}
}

func TestReadAt(t *testing.T) {
	eachWay(t, testReadAt)
}

func testReadAt(t *testing.T, way string) {
	const size = 1<<20 + 123
	f, data := patterned(t, size)
	r, read := reader(t, 8, way, f)
	defer r.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 500 {
		if i%2 == 0 { // from the disk again: RWF_NOWAIT and cachestat find nothing
			require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
		}
		off := rng.Int64N(size + 10)
		p := make([]byte, rng.IntN(70_000))
		n, err := read(p, off)
		want := data[min(off, size):min(off+int64(len(p)), size)]
		var werr error
		if len(want) < len(p) {
			werr = io.EOF
		}
		require.Equal(t, werr, err, "read of %d at %d", len(p), off)
		require.Equal(t, want, p[:n], "read of %d at %d", len(p), off)
	}
	_, err := r.ReadAt(^uintptr(0)>>1, make([]byte, 10), 0)
	require.Error(t, err, "a bad descriptor")
}

// TestConcurrent reads from many goroutines at once, more than the ring
// holds, and closes the ring while others still try: the ring's one
// waiter for completions passes from read to read as they finish.
func TestConcurrent(t *testing.T) {
	eachWay(t, testConcurrent)
}

func testConcurrent(t *testing.T, way string) {
	const size = 4 << 20
	f, data := patterned(t, size)
	r, read := reader(t, 4, way, f)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			p := make([]byte, 4096)
			for i := range 300 {
				if g == 0 && i%50 == 0 {
					unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
				}
				off := rng.Int64N(size - 4096)
				n, err := read(p, off)
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
				if _, err := read(p, 0); err != nil {
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

// TestReadAtDirect: a read the page cache does not hold goes to the disk
// and leaves the page cache as it was; one it holds is read from memory.
func TestReadAtDirect(t *testing.T) {
	f, data := patterned(t, 64<<10)
	r, _ := reader(t, 8, "direct", f)
	defer r.Close()
	dfd, err := OpenDirect(f.Name())
	require.NoError(t, err)
	defer CloseDirect(dfd)
	require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
	if _, err := directio.Cached(f.Fd(), 0, 1); err != nil {
		t.Skipf("the kernel cannot say what the page cache holds: %v", err)
	}
	buf := make([]byte, 5000)
	n, disk, err := r.ReadAtDirect(f.Fd(), dfd, buf, 8192+100)
	require.NoError(t, err)
	require.Equal(t, len(buf), n)
	require.Equal(t, data[8292:8292+5000], buf)
	require.True(t, disk)
	held, err := directio.Cached(f.Fd(), 8192+100, 5000)
	require.NoError(t, err)
	require.False(t, held, "a direct read left pages in the page cache")
	_, err = f.ReadAt(make([]byte, 5000), 8192+100)
	require.NoError(t, err)
	n, disk, err = r.ReadAtDirect(f.Fd(), dfd, buf, 8192+100)
	require.NoError(t, err)
	require.Equal(t, len(buf), n)
	require.Equal(t, data[8292:8292+5000], buf)
	require.False(t, disk, "the page cache held it")

	// In a batch, a read says where it was read from; Unchecked goes to
	// the disk without asking.
	for _, unchecked := range []bool{false, true} {
		rs := []Read{{Fd: f.Fd(), DirectFd: dfd, Direct: true, Unchecked: unchecked, P: make([]byte, 5000), Off: 8192 + 100}}
		disk := r.ReadMany(rs)
		require.NoError(t, rs[0].Err)
		require.Equal(t, data[8292:8292+5000], rs[0].P)
		require.Equal(t, !unchecked, rs[0].Cached, "unchecked %v", unchecked)
		require.Equal(t, unchecked, disk, "unchecked %v", unchecked)
	}
}
