package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/wal"
)

func log2(x float64) float64 { return math.Log2(x) }

// CheckReport says what Check walked.
type CheckReport struct {
	Documents    int64
	Postings     int64
	Fingerprints int64
	Blocks       int64
	WALRecords   int
}

// digest is an order-independent summary of a set of (a, b) pairs: two
// sets with the same digest are equal but with negligible probability.
type digest struct {
	n        int64
	sum, xor uint64
}

func (d *digest) add(a, b uint64) {
	h := mix(a*0x9e3779b97f4a7c15 ^ mix(b))
	d.n++
	d.sum += h
	d.xor ^= mix(h)
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

// Check walks the whole index: every table block's checksum and order,
// the block directory, that every table holds the same fingerprints as the
// postings, that documents and postings agree, the counters, and the
// write-ahead log. Each problem is reported with its location; the error
// wraps ErrCorrupt.
func (e *DB) Check(ctx context.Context) (CheckReport, error) {
	var rep CheckReport
	e.flushMu.Lock() // the tables hold still; writes go on into the memtable
	defer e.flushMu.Unlock()
	e.mu.RLock()
	if e.closed {
		e.mu.RUnlock()
		return rep, ErrClosed
	}
	st := e.st
	e.mu.RUnlock()
	snap := st.snap
	var problems []error
	bad := func(format string, args ...any) {
		if len(problems) < 100 {
			problems = append(problems, fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...))
		}
	}
	// Documents, then postings: the same (id, fp) pairs.
	var docs, posts, fpsOfPosts digest
	if err := scanReader(snap, []byte{spaceDocs}, func(k, v []byte) error {
		if len(k) != 9 || len(v) < 8 {
			bad("document key %x: malformed", k)
			return nil
		}
		docs.add(binary.BigEndian.Uint64(k[1:]), binary.BigEndian.Uint64(v))
		return ctx.Err()
	}); err != nil {
		return rep, err
	}
	var lastFP uint64
	first := true
	if err := scanReader(snap, []byte{spacePostings}, func(k, v []byte) error {
		if len(k) != 17 {
			bad("posting key %x: malformed", k)
			return nil
		}
		fp, id := binary.BigEndian.Uint64(k[1:]), binary.BigEndian.Uint64(k[9:])
		posts.add(id, fp)
		if first || fp != lastFP {
			fpsOfPosts.add(fp, 0)
		}
		first, lastFP = false, fp
		return ctx.Err()
	}); err != nil {
		return rep, err
	}
	rep.Documents, rep.Postings, rep.Fingerprints = docs.n, posts.n, fpsOfPosts.n
	if docs != posts {
		bad("documents (%d) and postings (%d) disagree", docs.n, posts.n)
	}
	if docs.n != st.docs {
		bad("document counter says %d, %d stored", st.docs, docs.n)
	}
	if fpsOfPosts.n != st.fps {
		bad("fingerprint counter says %d, postings hold %d", st.fps, fpsOfPosts.n)
	}
	// Tables.
	for t := range e.design.Tables {
		tb := &e.design.Tables[t]
		var fps digest
		var prev uint64
		n, pendBlocks := 0, 0
		dir := st.tables[t]
		if err := scanReader(snap, []byte{spaceTables, byte(t)}, func(k, v []byte) error {
			if len(k) != 10 {
				bad("table %d: malformed key %x", t, k)
				return nil
			}
			key := binary.BigEndian.Uint64(k[2:])
			rep.Blocks++
			if n >= len(dir.keys) || dir.keys[n] != key {
				bad("table %d block %016x: not in the block directory at position %d", t, key, n)
			} else if int(dir.sizes[n]) != len(v) {
				bad("table %d block %016x: %d bytes, the directory says %d", t, key, len(v), dir.sizes[n])
			}
			n++
			blk, err := codec.Decode(nil, v, st.codes[t])
			if err != nil {
				bad("table %d block %016x: %v", t, key, err)
				return nil
			}
			if blk[len(blk)-1] != key {
				bad("table %d block %016x: last fingerprint %016x differs from its key", t, key, blk[len(blk)-1])
			}
			if n > 1 && blk[0] <= prev {
				bad("table %d block %016x: starts at %016x, not above the previous block's %016x", t, key, blk[0], prev)
			}
			if pend := dir.pendingAt(n - 1); pend > 0 {
				all, err := withPending(snap, t, key, pend, blk)
				if err != nil {
					bad("%v", err)
					return nil
				}
				if n < len(dir.keys) && all[len(all)-1] != key {
					bad("table %d block %016x: pending %016x lies above the block", t, key, all[len(all)-1])
				}
				if n > 1 && all[0] <= prev {
					bad("table %d block %016x: pending %016x lies below the block", t, key, all[0])
				}
				blk = all
				pendBlocks++
			}
			prev = key
			for _, p := range blk {
				fps.add(tb.Unpermute(p), 0)
			}
			return ctx.Err()
		}); err != nil {
			return rep, err
		}
		if n != len(dir.keys) {
			bad("table %d: %d blocks stored, %d in the block directory", t, n, len(dir.keys))
		}
		stored := 0
		if err := scanReader(snap, []byte{spacePending, byte(t)}, func(k, v []byte) error {
			stored++
			return nil
		}); err != nil {
			return rep, err
		}
		if stored != pendBlocks {
			bad("table %d: %d pending lists stored, the directory counts %d", t, stored, pendBlocks)
		}
		if fps != fpsOfPosts {
			bad("table %d holds %d fingerprints, the postings %d (or other ones)", t, fps.n, fpsOfPosts.n)
		}
	}
	// Block directory entries without a block are found above by count.
	// The write-ahead log: every record readable.
	if e.wal != nil {
		if err := e.wal.Sync(); err != nil {
			return rep, err
		}
	}
	rs, err := wal.Replay(filepath.Join(e.dir, "wal"), st.walFrom, true, func(typ byte, p []byte) error {
		if typ != recOps {
			return fmt.Errorf("unknown record type %d", typ)
		}
		return decodeOps(p, func(bool, Doc) {})
	})
	rep.WALRecords = rs.Records
	if err != nil {
		bad("%v", err)
	}
	return rep, errors.Join(problems...)
}
