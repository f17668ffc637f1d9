//go:build linux

package uring

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestMergeDirect: direct reads whose pages overlap or touch, of one
// file, become one request, up to maxMerged bytes; a gap, or another
// file, starts the next.
func TestMergeDirect(t *testing.T) {
	const p = page
	for _, c := range []struct {
		name  string
		spans []directSpan // i is the read's place
		want  [][]int      // each request's reads, by place
	}{
		{"one", []directSpan{{0, 3, 0, p}}, [][]int{{0}}},
		{"overlapping, given backwards", []directSpan{{0, 3, 2 * p, 4 * p}, {1, 3, p, 3 * p}, {2, 3, 0, 2 * p}}, [][]int{{2, 1, 0}}},
		{"touching", []directSpan{{0, 3, 0, p}, {1, 3, p, 2 * p}}, [][]int{{0, 1}}},
		{"a gap", []directSpan{{0, 3, 0, p}, {1, 3, 2 * p, 3 * p}}, [][]int{{0}, {1}}},
		{"another file", []directSpan{{0, 3, 0, 2 * p}, {1, 4, p, 2 * p}, {2, 3, p, 3 * p}}, [][]int{{0, 2}, {1}}},
		{"within another", []directSpan{{0, 3, 0, 4 * p}, {1, 3, p, 2 * p}}, [][]int{{0, 1}}},
		{"past maxMerged", []directSpan{{0, 3, 0, maxMerged - p}, {1, 3, maxMerged - 2*p, maxMerged}, {2, 3, maxMerged - p, maxMerged + p}}, [][]int{{0, 1}, {2}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ms [maxBatch]merged
			sp := append([]directSpan(nil), c.spans...)
			var got [][]int
			for _, m := range ms[:mergeDirect(sp, &ms)] {
				var reads []int
				for _, s := range sp[m.lo:m.hi] {
					reads = append(reads, s.i)
					assert.LessOrEqual(t, m.start, s.start, "a read within its request")
					assert.GreaterOrEqual(t, m.end, s.end, "a read within its request")
				}
				assert.LessOrEqual(t, m.end-m.start, int64(maxMerged))
				got = append(got, reads)
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// TestReadManyShares: direct reads merged into one request answer as
// reads of their own, those that start on an 8-byte boundary share its
// buffer, and the buffer is given back only once the last lets go: a
// batch read after the first is released leaves the second's bytes alone.
func TestReadManyShares(t *testing.T) {
	f, data := patterned(t, 1<<20)
	r := newRing(t, 8, false)
	dfd, err := OpenDirect(f.Name())
	if errors.Is(err, syscall.EINVAL) {
		t.Skipf("no O_DIRECT on this file system: %v", err)
	}
	require.NoError(t, err)
	defer CloseDirect(dfd)
	require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
	read := func(off int64, n int) Read {
		return Read{Fd: f.Fd(), DirectFd: dfd, Direct: true, Unchecked: true, Off: off, Len: n}
	}
	rs := []Read{read(4000, 3000), read(104, 5000), read(6004, 900), read(9000, 100)}
	rs = append(rs, Read{Fd: f.Fd(), DirectFd: dfd, Direct: true, Unchecked: true, Off: 5000, P: make([]byte, 2000)})
	r.ReadMany(rs)
	for i := range rs {
		require.NoError(t, rs[i].Err, "read %d", i)
		require.Equal(t, data[rs[i].Off:rs[i].Off+int64(len(rs[i].P))], rs[i].P, "read %d", i)
	}
	shared := rs[0].lent
	require.Same(t, shared, rs[1].lent, "two reads on 8-byte boundaries in one request's buffer")
	require.Same(t, shared, rs[3].lent)
	assert.NotSame(t, shared, rs[2].lent, "a read off the boundary moved to a buffer of its own")
	assert.EqualValues(t, 3, shared.refs.Load())
	require.Len(t, shared.b, 3*page, "the request's pages")
	rs[0].Release()
	rs[3].Release()
	assert.EqualValues(t, 1, shared.refs.Load())
	assert.Len(t, shared.b, 3*page, "not given back while a read holds it")
	for range 20 { // pooled buffers of later batches
		more := []Read{read(500_000, 5000), read(503_000, 5000)}
		r.ReadMany(more)
		for i := range more {
			require.Equal(t, data[more[i].Off:more[i].Off+int64(more[i].Len)], more[i].P)
			more[i].Release()
		}
	}
	require.Equal(t, data[104:5104], rs[1].P, "the last read holding the buffer keeps its bytes")
	rs[1].Release()
	rs[2].Release()
	assert.EqualValues(t, 0, shared.refs.Load())
	assert.Len(t, shared.b, pooledAligned, "given back once the last lets go")
}
