package engine

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/codec"
)

// state is what queries see of Pebble: a snapshot and the block directory
// and codes that describe it. A flush replaces it whole.
type state struct {
	snap    *pebble.Snapshot
	tables  []tableIndex
	codes   []codec.CodeMap
	curCode []uint32 // per table; 0 = none yet
	docs    int64
	fps     int64
	walFrom uint64
	units   *unitDir // the postings' units in the cache
	// iters keeps postings iterators on snap for reuse: opening one costs
	// about as much as the seek a match needs (a third of a warm query).
	iters chan *pebble.Iterator
}

// postingsIter returns an iterator over st's postings, reused if one is
// free.
func (st *state) postingsIter() (*pebble.Iterator, error) {
	select {
	case it := <-st.iters:
		return it, nil
	default:
		return st.snap.NewIter(&pebble.IterOptions{LowerBound: []byte{spacePostings}, UpperBound: []byte{spacePostings + 1}})
	}
}

// release gives an iterator from postingsIter back.
func (st *state) release(it *pebble.Iterator) {
	if it == nil {
		return
	}
	select {
	case st.iters <- it:
	default:
		it.Close()
	}
}

// close closes the state's free iterators and its snapshot; no query may
// use it any more.
func (st *state) close() error {
	for {
		select {
		case it := <-st.iters:
			it.Close()
		default:
			return st.snap.Close()
		}
	}
}
