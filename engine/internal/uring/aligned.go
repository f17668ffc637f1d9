package uring

import (
	"sync"

	"github.com/simhashdb/simhashdb/internal/directio"
)

// page is the alignment O_DIRECT asks of a read's offset, length and
// buffer.
const page = directio.Align

// aligned is a buffer whose start is page aligned.
type aligned struct {
	b    []byte
	pool bool
}

var alignedPool = sync.Pool{New: func() any { return &aligned{b: directio.Aligned(pooledAligned), pool: true} }}

// pooledAligned is the size of the pooled buffers: the two or three
// pages a data block spans.
const pooledAligned = 4 * page

func alignedBuffer(n int) *aligned {
	if n <= pooledAligned {
		a := alignedPool.Get().(*aligned)
		a.b = a.b[:n]
		return a
	}
	return &aligned{b: directio.Aligned(n)}
}

func (a *aligned) release() {
	if a.pool {
		a.b = a.b[:pooledAligned]
		alignedPool.Put(a)
	}
}
