package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/table"
	"github.com/simhashdb/simhashdb/internal/mix"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/wal"
)

// CheckReport says what Check walked.
type CheckReport struct {
	Documents    int64 `json:"documents"`
	Postings     int64 `json:"postings"`
	Fingerprints int64 `json:"fingerprints"`
	Blocks       int64 `json:"blocks"`
	// BlockVersions counts the table blocks by the codec version each is
	// written in ("1", "2", "3"): a flush rewrites older ones as it
	// merges into them, in the newest.
	BlockVersions map[string]int64 `json:"block_versions"`
	WALRecords    int              `json:"wal_records"`
	// Unlisted are sstables in the store's folder that its MANIFEST does
	// not list: left by a crash after a compaction (harmless: a writable
	// open deletes them), or forgotten by a damaged MANIFEST (then the open
	// is refused). Their data is not part of the index.
	Unlisted []string `json:"unlisted,omitempty"`
}

// digest is an order-independent summary of a set of (a, b) pairs: two
// sets with the same digest are equal but with negligible probability.
type digest struct {
	n        int64
	sum, xor uint64
}

func (d *digest) add(a, b uint64) {
	h := mix.Murmur3(a*0x9e3779b97f4a7c15 ^ mix.Murmur3(b))
	d.n++
	d.sum += h
	d.xor ^= mix.Murmur3(h)
}

// Check walks the whole index: every table block's checksum and order,
// the block directory, that every table holds the same fingerprints as the
// postings, that documents and postings agree, the counters, the
// write-ahead log, and the Pebble store's files (its MANIFEST, every block
// of every sstable, and sstables it does not list). Each problem is reported with its location; the error
// wraps ErrCorrupt.
func (db *DB) Check(ctx context.Context) (_ CheckReport, err error) {
	defer func() { err = storeErr(err) }()
	rep := CheckReport{BlockVersions: map[string]int64{}}
	db.flushMu.Lock() // the tables hold still; writes go on into the memtable
	defer db.flushMu.Unlock()
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return rep, ErrClosed
	}
	st := db.st
	db.mu.RUnlock()
	c := &checker{db: db, ctx: ctx, st: st, rep: &rep}
	docs, err := c.documents()
	if err != nil {
		return rep, err
	}
	posts, fps, err := c.postings()
	if err != nil {
		return rep, err
	}
	rep.Documents, rep.Postings, rep.Fingerprints = docs.n, posts.n, fps.n
	if docs != posts {
		c.bad("documents (%d) and postings (%d) disagree", docs.n, posts.n)
	}
	if docs.n != st.docs {
		c.bad("document counter says %d, %d stored", st.docs, docs.n)
	}
	if fps.n != st.fps {
		c.bad("fingerprint counter says %d, postings hold %d", st.fps, fps.n)
	}
	for t := range db.design.Tables {
		if err := c.table(t, &db.design.Tables[t], fps); err != nil {
			return rep, err
		}
	}
	if err := db.checkWAL(c); err != nil {
		return rep, err
	}
	if err := db.checkStore(c); err != nil {
		return rep, err
	}
	return rep, errors.Join(c.problems...)
}

// checker gathers Check's problems.
type checker struct {
	db       *DB
	ctx      context.Context
	st       *state
	rep      *CheckReport
	problems []error
}

// bad reports a problem (the first 100 of them).
func (c *checker) bad(format string, args ...any) {
	if len(c.problems) < 100 {
		c.problems = append(c.problems, fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...))
	}
}

// badErr reports a problem that is an error already.
func (c *checker) badErr(err error) {
	if len(c.problems) < 100 {
		if !errors.Is(err, ErrCorrupt) {
			err = format.Corrupt("check", err)
		}
		c.problems = append(c.problems, err)
	}
}

// documents digests the (id, fingerprint) pairs of the documents.
func (c *checker) documents() (digest, error) {
	var docs digest
	err := store.Scan(c.st.snap, format.SpacePrefix(format.SpaceDocs), func(k, v []byte) error {
		id, err := format.ParseDocKey(k)
		if err != nil {
			c.badErr(err)
			return nil
		}
		fp, err := format.DocFingerprint(id, v)
		if err == nil {
			err = c.db.checkStoredName(id, v[8:], true)
		}
		if err != nil {
			c.badErr(err)
			return nil
		}
		docs.add(id, fp)
		return c.ctx.Err()
	})
	return docs, err
}

// postings digests the (id, fingerprint) pairs of the postings, and their
// distinct fingerprints.
func (c *checker) postings() (posts, fps digest, err error) {
	var lastFP uint64
	first := true
	err = store.Scan(c.st.snap, format.SpacePrefix(format.SpacePostings), func(k, v []byte) error {
		fp, id, err := format.ParsePostingKey(k)
		if err != nil {
			c.badErr(err)
			return nil
		}
		if err := c.db.checkStoredName(id, v, false); err != nil {
			c.badErr(fmt.Errorf("posting of fingerprint %016x: %w", fp, err))
		}
		posts.add(id, fp)
		if first || fp != lastFP {
			fps.add(fp, 0)
		}
		first, lastFP = false, fp
		return c.ctx.Err()
	})
	return posts, fps, err
}

// table checks table t's blocks and pending lists against its directory,
// and its fingerprints against want, the postings'.
func (c *checker) table(t int, tb *permutation.Table, want digest) error {
	var fps digest
	var prev uint64
	n, pendBlocks := 0, 0
	dir := &c.st.tables[t]
	snap := c.st.snap
	if err := store.Scan(snap, format.TablePrefix(format.SpaceTables, t), func(k, v []byte) error {
		_, key, err := format.ParseTableKey(format.SpaceTables, k, len(c.st.tables))
		if err != nil {
			c.badErr(err)
			return nil
		}
		c.rep.Blocks++
		version := codec.BlockVersion(v)
		c.rep.BlockVersions[strconv.Itoa(int(version))]++
		if n >= dir.Len() || dir.Key(n) != key {
			c.badErr(format.CorruptBlock(t, key, "not in the block directory at position %d", n))
		} else if e := dir.Entry(n); e.Size() != len(v) {
			c.badErr(format.CorruptBlock(t, key, "%d bytes, the directory says %d", len(v), e.Size()))
		} else if e.Version() != 0 && e.Version() != version {
			c.badErr(format.CorruptBlock(t, key, "codec version %d, the directory says %d", version, e.Version()))
		}
		n++
		blk, err := table.DecodeValue(nil, v, dir.Codes(), t, key)
		if err != nil {
			c.badErr(err)
			return nil
		}
		if n > 1 && blk[0] <= prev {
			c.badErr(format.CorruptBlock(t, key, "starts at %016x, not above the previous block's %016x", blk[0], prev))
		}
		if pend := dir.PendingAt(n - 1); pend > 0 {
			all, err := table.WithPending(snap, t, key, pend, blk)
			if err != nil {
				c.badErr(err)
				return nil
			}
			if n < dir.Len() && all[len(all)-1] != key {
				c.badErr(format.CorruptBlock(t, key, "pending %016x lies above the block", all[len(all)-1]))
			}
			if n > 1 && all[0] <= prev {
				c.badErr(format.CorruptBlock(t, key, "pending %016x lies below the block", all[0]))
			}
			blk = all
			pendBlocks++
		}
		prev = key
		for _, p := range blk {
			fps.add(tb.Unpermute(p), 0)
		}
		return c.ctx.Err()
	}); err != nil {
		return err
	}
	// Directory entries without a block are found by count.
	if n != dir.Len() {
		c.bad("table %d: %d blocks stored, %d in the block directory", t, n, dir.Len())
	}
	stored := 0
	if err := store.Scan(snap, format.TablePrefix(format.SpacePending, t), func(k, v []byte) error {
		stored++
		return nil
	}); err != nil {
		return err
	}
	if stored != pendBlocks {
		c.bad("table %d: %d pending lists stored, the directory counts %d", t, stored, pendBlocks)
	}
	if fps != want {
		c.bad("table %d holds %d fingerprints, the postings %d (or other ones)", t, fps.n, want.n)
	}
	return nil
}

// checkWAL reads every record of the write-ahead log that the tables do
// not hold yet.
func (db *DB) checkWAL(c *checker) error {
	if log := db.currentLog(); log != nil {
		if err := log.Sync(); err != nil {
			return err
		}
	}
	dir := filepath.Join(db.dir, walDir)
	// Positions grow from commit to commit. (The log may begin with
	// commits the tables hold already: a crash between the flushes of two
	// memtables. So the tables' own position is no bound.)
	last := uint64(0)
	rs, err := wal.Replay(dir, c.st.walFrom, wal.ReplayOptions{FS: db.fs, Recovery: db.opts.WALRecovery, ReadOnly: true},
		func(end wal.Position, typ byte, p []byte) error {
			return format.DecodeRecord(typ, p, func(op format.Op) {
				if op.Position == 0 {
					return
				}
				if op.Position <= last {
					c.bad("write-ahead log: the commit ending at segment %d offset %d has position %d, not above %d before it", end.Segment, end.Offset, op.Position, last)
				}
				last = op.Position
			})
		})
	c.rep.WALRecords = rs.Records
	if err != nil {
		c.badErr(walErr(err))
	}
	for _, d := range rs.Damage {
		c.bad("write-ahead log: a damaged record: %s", d)
	}
	// What an open discarded stays in quarantine until removed by hand.
	kept, err := wal.Quarantined(db.fs, dir)
	if err != nil {
		return err
	}
	for _, q := range kept {
		c.bad("write-ahead log: %s holds a damaged part of the log that an open discarded (the records in it are lost unless written again); remove the file once dealt with", q)
	}
	return nil
}

// checkStore is Check's look below the engine's keys, at the store's own
// files (store.CheckFiles): damage found is counted, files the MANIFEST
// does not list are reported.
func (db *DB) checkStore(c *checker) error {
	unlisted, err := db.store.CheckFiles(c.ctx, c.badErr)
	c.rep.Unlisted = append(c.rep.Unlisted, unlisted...)
	return err
}
