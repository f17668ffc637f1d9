package engine

import (
	"container/list"
	"sync"
)

type cacheKey struct {
	table uint8
	key   uint64
}

type cacheEntry struct {
	k   cacheKey
	fps []uint64
}

// blockCache keeps decoded table blocks (permuted fingerprints, sorted) in
// LRU order within a byte budget. Decoded blocks cost 8 bytes a fingerprint
// against the codec's ~5.5, and spare the warm probe both Pebble and the
// decoder.
type blockCache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	m      map[cacheKey]*list.Element
	lru    list.List
	hits   uint64
	misses uint64
}

func newBlockCache(budget int64) *blockCache {
	return &blockCache{budget: budget, m: map[cacheKey]*list.Element{}}
}

const cacheEntryOverhead = 96

func (c *blockCache) get(k cacheKey) ([]uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[k]; ok {
		c.lru.MoveToFront(el)
		c.hits++
		return el.Value.(*cacheEntry).fps, true
	}
	c.misses++
	return nil, false
}

func (c *blockCache) put(k cacheKey, fps []uint64) {
	cost := int64(len(fps))*8 + cacheEntryOverhead
	c.mu.Lock()
	defer c.mu.Unlock()
	if cost > c.budget {
		return
	}
	if el, ok := c.m[k]; ok {
		c.remove(el)
	}
	c.m[k] = c.lru.PushFront(&cacheEntry{k: k, fps: fps})
	c.used += cost
	for c.used > c.budget {
		c.remove(c.lru.Back())
	}
}

func (c *blockCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*cacheEntry)
	delete(c.m, e.k)
	c.used -= int64(len(e.fps))*8 + cacheEntryOverhead
}

func (c *blockCache) drop(k cacheKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[k]; ok {
		c.remove(el)
	}
}

func (c *blockCache) stats() (used int64, hits, misses uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, c.hits, c.misses
}
