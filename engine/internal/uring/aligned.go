package uring

import (
	"sync"
	"sync/atomic"

	"github.com/simhashdb/simhashdb/internal/directio"
)

// page is the alignment O_DIRECT asks of a read's offset, length and
// buffer.
const page = directio.Align

// aligned is a buffer whose start is page aligned, held by refs reads
// (merged direct reads share one).
type aligned struct {
	b    []byte
	pool bool
	refs atomic.Int32
}

var alignedPool = sync.Pool{New: func() any { return &aligned{b: directio.Aligned(pooledAligned), pool: true} }}

// pooledAligned is the size of the pooled buffers: the two or three
// pages a data block spans.
const pooledAligned = 4 * page

// alignedBuffer returns a buffer of n bytes, held once.
func alignedBuffer(n int) *aligned {
	var a *aligned
	if n <= pooledAligned {
		a = alignedPool.Get().(*aligned)
		a.b = a.b[:n]
	} else {
		a = &aligned{b: directio.Aligned(n)}
	}
	a.refs.Store(1)
	return a
}

// share makes a held by n reads, each of which releases it.
func (a *aligned) share(n int) { a.refs.Store(int32(n)) }

// shared reports whether another read holds a too.
func (a *aligned) shared() bool { return a.refs.Load() > 1 }

// release lets go of a; the last to hold it gives it back.
func (a *aligned) release() {
	if a.refs.Add(-1) == 0 && a.pool {
		a.b = a.b[:pooledAligned]
		alignedPool.Put(a)
	}
}
