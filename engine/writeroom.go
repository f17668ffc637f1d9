package engine

// writeRoom is the part of Pebble's cache that Pebble's writes take for a
// memtable budget: Pebble reserves its memtables (two of 4 MiB by default)
// from the cache, and a flush's batch, which is larger than its memtables,
// until it has written the batch to an sstable. A flush's batch was up to
// 0.6 times the memtable it came from, and a memtable reaches twice its
// budget while the one before it is flushed (stall); two batches may wait
// at once. Without this room a flush's batch takes all of a small cache,
// and every block read, bloom filters too, misses the cache until Pebble
// has written it: online inserts slow down several times.
func writeRoom(budget int64) int64 { return 2*budget + 8<<20 }

// fitWriteRoom leaves the write room of a memtable budget in Pebble's cache,
// whose size is pebbleCache and the largest write room: it reserves the
// rest, which holds no blocks then.
func (e *DB) fitWriteRoom(budget int64) {
	e.roomMu.Lock()
	defer e.roomMu.Unlock()
	if e.roomFree != nil {
		e.roomFree()
	}
	e.roomFree = e.pcache.Reserve(int(max(e.roomMax-writeRoom(budget), 0)))
}

// releaseCache drops the engine's reservation and reference on Pebble's
// cache.
func (e *DB) releaseCache() {
	e.roomMu.Lock()
	defer e.roomMu.Unlock()
	if e.roomFree != nil {
		e.roomFree()
		e.roomFree = nil
	}
	e.pcache.Unref()
}
