//go:build linux

package uring

import (
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestReadMany checks batches of reads against the file's bytes, each way
// of reading: anywhere, of any length, across and past the end, more of
// them than the ring holds, while other goroutines read one at a time and
// in batches of their own.
func TestReadMany(t *testing.T) {
	eachWay(t, testReadMany)
}

func testReadMany(t *testing.T, way string) {
	const size = 1<<20 + 123
	f, data := patterned(t, size)
	r, read := reader(t, 8, way, f)
	var dfd uintptr
	if way == "direct" {
		var err error
		dfd, err = OpenDirect(f.Name())
		require.NoError(t, err)
		defer CloseDirect(dfd)
	}
	check := func(g int, batches int) error {
		rng := rand.New(rand.NewPCG(uint64(g), 3))
		for b := range batches {
			if g == 0 && b%2 == 0 { // from the disk again
				require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
			}
			rs := make([]Read, 1+rng.IntN(20))
			lent := make([]bool, len(rs))
			for i := range rs {
				rs[i] = Read{Fd: f.Fd(), DirectFd: dfd, Direct: way == "direct", Off: rng.Int64N(size + 10), Len: rng.IntN(20_000)}
				if lent[i] = rng.IntN(2) == 0; !lent[i] { // into the caller's buffer, else the ring's
					rs[i].P = make([]byte, rs[i].Len)
				}
			}
			r.ReadMany(rs)
			for i := range rs {
				rd := &rs[i]
				if len(rd.P) != rd.Len {
					return errors.New("a batch's read is not the length asked")
				}
				if lent[i] && rd.Len > 0 && uintptr(unsafe.Pointer(&rd.P[0]))%8 != 0 {
					return errors.New("a read into the ring's buffer does not start on an 8-byte boundary")
				}
				want := data[min(rd.Off, size):min(rd.Off+int64(rd.Len), size)]
				var werr error
				if len(want) < rd.Len {
					werr = io.EOF
				}
				if rd.Err != werr || string(rd.P[:rd.N]) != string(want) {
					return errors.New("a batch's read is not the file's bytes")
				}
				rd.Release()
			}
		}
		return nil
	}
	require.NoError(t, check(0, 100), "alone")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(2)
		go func() { defer wg.Done(); errs <- check(g+1, 50) }()
		go func() { // one at a time beside the batches
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 4))
			p := make([]byte, 4096)
			for range 200 {
				off := rng.Int64N(size - 4096)
				if n, err := read(p, off); err != nil || n != len(p) || string(p) != string(data[off:off+4096]) {
					errs <- errors.New("a single read beside the batches is not the file's bytes")
					return
				}
			}
			errs <- nil
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	bad := []Read{{Fd: ^uintptr(0) >> 1, P: make([]byte, 10)}, {Fd: f.Fd(), DirectFd: dfd, Direct: way == "direct", P: make([]byte, 10)}}
	r.ReadMany(bad)
	require.Error(t, bad[0].Err, "a bad descriptor")
	require.NoError(t, bad[1].Err, "a good read beside a bad one")
	require.Equal(t, data[:10], bad[1].P)
	require.NoError(t, r.Close())
	if way == "ring" { // no page cache to answer it first
		closed := []Read{{Fd: f.Fd(), P: make([]byte, 10)}}
		r.ReadMany(closed)
		require.ErrorIs(t, closed[0].Err, ErrClosed)
	}
}
