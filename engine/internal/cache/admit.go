package cache

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/simhashdb/simhashdb/internal/mix"
)

// Admit says whether a table block that missed in s, of about cost bytes,
// should be cached. While the cache has room (roomShare), yes. Once it is
// full, only a block that missed before, since the doorkeeper last forgot
// (TinyLFU's admission, as Caffeine and Ristretto do it): on an index
// larger than the cache, most blocks a cold query reads are read once, and
// caching each would evict blocks that queries come back to, and pack a
// block that one probe scans (View serves that probe).
func (c *Cache) Admit(s *Slot, cost int64) bool {
	if c.Room() >= cost+c.budget.Load()/roomShare {
		return true
	}
	c.door.once.Do(func() { c.door.init(c.entries()) })
	return c.door.seen(s)
}

// roomShare: a cache is full, for Admit, once less than this share of its
// budget is free. Where it evicts, what is free is what the last eviction
// left, often more than the next block takes.
const roomShare = 64

// entries is how many blocks c holds.
func (c *Cache) entries() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(len(c.ring))
}

// doorkeeper remembers which slots missed recently: a bit for each, by a
// hash of its address (a slot lives as long as its block directory; the
// addresses of a directory's slots are a progression, which a finaliser
// spreads where a multiplicative hash keeps some of its structure), in a
// bitmap of doorkeeperBits for each block the cache held when it first
// filled. It forgets all after a window of that many misses, so that a
// block comes in on its second miss within about a cache's turnover. The
// window counts blocks, not bytes over a typical block's: blocks hold from
// a few hundred fingerprints to a few thousand, and a window of many
// turnovers admits blocks that queries do not come back to before they
// are evicted.
type doorkeeper struct {
	once   sync.Once // init, at the first block that finds the cache full
	bits   []atomic.Uint64
	shift  uint // a hash's top bits index the bitmap
	misses atomic.Uint64
	window uint64
}

// doorkeeperBits is the bits of the bitmap for each miss of a window: a
// block the doorkeeper never saw is taken for seen at most once in this
// many, by the window's end. On an index larger than the cache most
// misses are first ones, and each taken for seen costs a packing and an
// eviction.
const doorkeeperBits = 32

// doorkeeperMost bounds the window, and so the bitmap.
const doorkeeperMost = 1 << 20

// init sizes the doorkeeper for a cache of entries blocks.
func (d *doorkeeper) init(entries int64) {
	entries = min(max(entries, 512), doorkeeperMost)
	lg := bits.Len64(uint64(entries)*doorkeeperBits - 1) // a power of two >= doorkeeperBits an entry
	d.bits, d.shift, d.window = make([]atomic.Uint64, 1<<lg/64), uint(64-lg), uint64(entries)
}

// seen reports whether s missed before since the doorkeeper last forgot,
// and remembers it.
func (d *doorkeeper) seen(s *Slot) bool {
	h := mix.Murmur3(uint64(uintptr(unsafe.Pointer(s)))) >> d.shift
	w, m := &d.bits[h/64], uint64(1)<<(h%64)
	if w.Load()&m != 0 {
		return true
	}
	w.Or(m)
	if d.misses.Add(1)%d.window == 0 {
		// Misses racing with this lose their bits: they come in a miss
		// later.
		for i := range d.bits {
			d.bits[i].Store(0)
		}
	}
	return false
}
