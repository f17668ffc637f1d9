//go:build linux

package uring

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
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

// BenchmarkReadMany reads batches of random 4 KiB blocks of a file the page
// cache does not hold, with O_DIRECT, one batch at a time: the time and
// the processor (user and system, from getrusage) a batch takes. Run it
// beside fio's rounds of the same size to see what the ring adds.
func BenchmarkReadMany(b *testing.B) {
	const size = 256 << 20
	p := filepath.Join(b.TempDir(), "data")
	w, err := os.Create(p)
	require.NoError(b, err)
	require.NoError(b, w.Truncate(size))
	chunk := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(chunk)) {
		_, err := w.WriteAt(chunk, off)
		require.NoError(b, err)
	}
	require.NoError(b, w.Sync())
	require.NoError(b, w.Close())
	file, err := os.Open(p)
	require.NoError(b, err)
	defer file.Close()
	dfd, err := OpenDirect(p)
	if err != nil {
		b.Skipf("no O_DIRECT here: %v", err)
	}
	defer CloseDirect(dfd)
	require.NoError(b, unix.Fadvise(int(file.Fd()), 0, 0, unix.FADV_DONTNEED))
	r, err := New(64)
	if errors.Is(err, ErrUnsupported) {
		b.Skipf("no io_uring here: %v", err)
	}
	require.NoError(b, err)
	defer r.Close()
	for _, n := range []int{1, 4, 10} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			rs := make([]Read, n)
			var before, after unix.Rusage
			require.NoError(b, unix.Getrusage(unix.RUSAGE_SELF, &before))
			for b.Loop() {
				for i := range rs {
					rs[i] = Read{Fd: file.Fd(), DirectFd: dfd, Direct: true, Unchecked: true, Off: rng.Int64N(size/4096) * 4096, Len: 4096}
				}
				r.ReadMany(rs)
				for i := range rs {
					if rs[i].Err != nil {
						b.Fatal(rs[i].Err)
					}
					rs[i].Release()
				}
			}
			require.NoError(b, unix.Getrusage(unix.RUSAGE_SELF, &after))
			cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}

// TestGroupWaitsForItsLast: a batch whose goroutine is not the ring's
// waiter (another goroutine's read came first) is done when the last of
// its reads completes, not the first. Pipes hold each read until the test
// writes to them.
func TestGroupWaitsForItsLast(t *testing.T) {
	var pipes [3][2]int
	for i := range pipes {
		require.NoError(t, unix.Pipe2(pipes[i][:], unix.O_CLOEXEC))
		t.Cleanup(func() { unix.Close(pipes[i][0]); unix.Close(pipes[i][1]) })
	}
	r := newRing(t, 8, false)
	t.Cleanup(func() { r.Close() })
	// Before the ring closes (Close waits for the reads in flight), a
	// byte for every read, in case the test failed with some waiting.
	t.Cleanup(func() {
		for i := range pipes {
			unix.Write(pipes[i][1], []byte{0})
		}
	})
	inflight := func(n int) { // wait until the ring has n reads in flight
		for {
			r.mu.Lock()
			k := r.inflight
			r.mu.Unlock()
			if k == n {
				return
			}
			runtime.Gosched()
		}
	}
	write := func(i int, b byte) {
		_, err := unix.Write(pipes[i][1], []byte{b})
		require.NoError(t, err)
	}

	// The waiter: one read, in first.
	waiter := make(chan error, 1)
	wp := make([]byte, 1)
	go func() { _, err := r.ReadAt(uintptr(pipes[0][0]), wp, -1); waiter <- err }()
	inflight(1)

	// The batch of two.
	rs := []Read{{Fd: uintptr(pipes[1][0]), P: make([]byte, 1), Off: -1}, {Fd: uintptr(pipes[2][0]), P: make([]byte, 1), Off: -1}}
	batch := make(chan struct{})
	go func() { r.ReadMany(rs); close(batch) }()
	inflight(3)
	var g *group
	r.mu.Lock()
	for _, req := range r.slots {
		if req != nil && req.fd == uintptr(pipes[1][0]) {
			g = req.g
		}
	}
	r.mu.Unlock()
	require.NotNil(t, g, "the batch's first read is in flight")

	write(1, 'a')
	inflight(2) // the waiter took the batch's first completion
	r.mu.Lock()
	left := g.left
	r.mu.Unlock()
	require.Equal(t, 1, left, "one of the batch's reads is left")
	select {
	case <-g.done:
		t.Fatal("the batch was done at its first read")
	case <-batch:
		t.Fatal("ReadMany returned with a read in flight")
	default:
	}

	write(2, 'b')
	<-batch
	require.NoError(t, rs[0].Err)
	require.NoError(t, rs[1].Err)
	require.Equal(t, []byte("a"), rs[0].P[:rs[0].N])
	require.Equal(t, []byte("b"), rs[1].P[:rs[1].N])
	write(0, 'c')
	require.NoError(t, <-waiter)
	require.Equal(t, []byte("c"), wp)
}
