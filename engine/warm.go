package engine

import (
	"context"
	"errors"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/table"
	"github.com/simhashdb/simhashdb/engine/internal/tasks"
)

// errCacheFull stops a warm-up scan once its share of the cache is spent.
var errCacheFull = errors.New("cache full")

// warmPebbleRoom is what Pebble's block cache may hold while Warm reads.
const warmPebbleRoom = 8 << 20

// Warm counts what it caches itself: the cache evicts to stay within its
// budget, so its fill level never says that a warm-up should stop, and a
// warm-up that went on would evict what it cached before and read the whole
// index for nothing.

// Warm reads the index into the cache until the cache is full or holds it
// all: each table's blocks first (every query reads one of each table),
// an equal share of the room per table, then the postings of the
// documents (a query reads them for its matches). A query that follows
// finds its blocks decoded instead of paying a read and a decode for each;
// without Warm the cache fills as queries come, and the first ones after
// opening run at the speed of a cold cache. Pebble's block cache, its share
// of Options.CacheSize, is kept nearly empty while Warm reads, so that the
// index is not held twice. A long-running service calls it once after
// Open. Writes and queries may run meanwhile; ctx cancels it.
func (db *DB) Warm(ctx context.Context) (err error) {
	defer func() { err = storeErr(err) }()
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return ErrClosed
	}
	st := db.acquire()
	db.mu.RUnlock()
	defer st.unref()
	// What Warm reads goes into this cache, packed; Pebble's cache would
	// keep a second copy of the last of it, which no query reads again.
	// Pebble reads through its cache always, so its share is held back
	// while Warm reads, but for a little room for concurrent queries.
	pebbleRoom := int64(warmPebbleRoom)
	if r := db.opts.knobs.warmPebbleRoom; r != nil {
		pebbleRoom = *r
	}
	defer db.store.ReserveCache(int(max(db.store.CacheShare()-pebbleRoom, 0)))()
	room := db.cache.Room()
	share := room / int64(max(len(st.tables), 1))
	spent, err := tasks.Parallel(ctx, len(st.tables), func(t int) ([]int64, error) {
		n, err := db.warmTable(ctx, st, t, share)
		return []int64{n}, err
	})
	if err != nil {
		return err
	}
	for _, n := range spent {
		room -= n[0]
	}
	return db.warmUnits(ctx, st, room)
}

// warmTable caches table t's blocks in order until they take room bytes
// or the table is read, and returns the bytes it cached.
func (db *DB) warmTable(ctx context.Context, st *state, t int, room int64) (int64, error) {
	ti, spent := &st.tables[t], int64(0)
	var buf []uint64 // the cache keeps blocks packed: one decode buffer
	err := st.blocks.Walk(t, func(j int, last uint64, v []byte) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if spent >= room {
			return errCacheFull
		}
		if db.cache.Load(ti.Slot(j)) == nil {
			fps, err := table.DecodeValue(buf[:0], v, ti.Codes(), t, last)
			if err != nil {
				return err
			}
			pend, err := table.ReadPending(st.snap, t, last, ti.Pending(j))
			if err != nil {
				return err
			}
			buf = fps
			b := cache.NewEntry(cache.Pack(fps), pend)
			if spent += b.Cost(); spent <= room {
				db.cache.PutEntry(ti.Slot(j), b)
			}
		}
		return nil
	})
	if errors.Is(err, errCacheFull) {
		err = nil
	}
	return spent, err
}

// warmUnits caches the postings' units in order while they take less than
// room bytes.
func (db *DB) warmUnits(ctx context.Context, st *state, room int64) error {
	it, err := st.postingsIter()
	if err != nil {
		return err
	}
	defer st.release(it)
	for u := range st.units.Len() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if room <= 0 {
			return nil
		}
		s := st.units.Peek(u)
		if s != nil && db.cache.Load(s) != nil {
			continue // cached already
		}
		b, _, err := st.units.Read(db.cache, it, u<<st.units.Shift())
		if err != nil {
			return err
		}
		if b != nil {
			room -= b.Cost()
		} else {
			room -= cache.EntryOverhead // a big unit, cached as such
		}
	}
	return nil
}
