package engine

import (
	"context"
	"errors"
)

// errCacheFull stops a warm-up scan once its share of the cache is spent.
var errCacheFull = errors.New("cache full")

// Warm reads the index into the cache until the cache is full or holds it
// all: each table's blocks first (every query reads one of each table),
// an equal share of the room per table, then the postings of the
// documents (a query reads them for its matches). A query that follows
// finds its blocks decoded instead of paying a read and a decode for each;
// without Warm the cache fills as queries come, and the first ones after
// opening run at the speed of a cold cache. A long-running service calls
// it once after Open. Writes and queries may run meanwhile; ctx cancels it.
func (e *DB) Warm(ctx context.Context) (err error) {
	defer func() { err = storeErr(err) }()
	e.mu.RLock()
	if e.closed {
		e.mu.RUnlock()
		return ErrClosed
	}
	st := e.acquire()
	e.mu.RUnlock()
	defer st.unref()
	room := e.cache.budget - e.cache.used.Load()
	share := room / int64(max(len(st.tables), 1))
	if _, err := parallel(ctx, len(st.tables), func(t int) ([]struct{}, error) {
		return nil, e.warmTable(ctx, st, t, e.cache.used.Load()+share)
	}); err != nil {
		return err
	}
	return e.warmUnits(ctx, st)
}

// warmTable caches table t's blocks in order until the cache holds upTo
// bytes or the table is read.
func (e *DB) warmTable(ctx context.Context, st *state, t int, upTo int64) error {
	ti, j := &st.tables[t], 0
	err := scanReader(st.snap, tablePrefix(spaceTables, t), func(k, v []byte) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.cache.used.Load() >= upTo {
			return errCacheFull
		}
		_, last, err := parseTableKey(spaceTables, k, len(st.tables))
		if err != nil {
			return err
		}
		if j >= len(ti.keys) || ti.keys[j] != last {
			return corruptBlock(t, last, "not in the block directory")
		}
		if _, _, ok := e.cache.peek(ti.slots[j]); !ok {
			fps, err := decodeValue(nil, v, ti.codes, t, last)
			if err != nil {
				return err
			}
			pend, err := readPending(st.snap, t, last, ti.pending(j))
			if err != nil {
				return err
			}
			e.cache.put(ti.slots[j], fps, pend)
		}
		j++
		return nil
	})
	if errors.Is(err, errCacheFull) {
		return nil
	}
	return err
}

// warmUnits caches the postings' units in order while the cache has room.
func (e *DB) warmUnits(ctx context.Context, st *state) error {
	it, err := st.postingsIter()
	if err != nil {
		return err
	}
	defer st.release(it)
	for u := range uint64(len(st.units.slots)) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.cache.used.Load() >= e.cache.budget {
			return nil
		}
		if _, _, err := e.unitOf(st, it, u<<st.units.shift); err != nil {
			return err
		}
	}
	return nil
}
