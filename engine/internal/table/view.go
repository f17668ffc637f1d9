package table

import (
	"sync"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
)

// view is a table block that a probe read and the cache did not admit:
// decoded into buf, which e reads in place (cache.View).
type view struct {
	e   cache.Entry
	buf []uint64
}

// views are the blocks one query decoded for itself; the query gives them
// back when its probes are done. Each view is an allocation of its own,
// so the entries handed out stay where they are as more are taken.
type views struct {
	mu  sync.Mutex // readMisses' goroutines take views together
	all []*view
	n   int
}

var viewPool = sync.Pool{New: func() any { return new(views) }}

// take returns a view that no probe of this query uses.
func (vs *views) take() *view {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.n == len(vs.all) {
		vs.all = append(vs.all, new(view))
	}
	w := vs.all[vs.n]
	vs.n++
	return w
}

// maxViewBuf is the largest decode buffer a pooled view keeps: a block of
// heavy duplicates may be large, and one such query should not hold its
// memory for every query after it.
const maxViewBuf = 1 << 13

// release gives the views back for another query.
func (vs *views) release() {
	for _, w := range vs.all[:vs.n] {
		w.e.SetView(nil, nil)
		if cap(w.buf) > maxViewBuf {
			w.buf = nil
		}
	}
	vs.n = 0
	viewPool.Put(vs)
}
