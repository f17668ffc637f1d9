package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/sstable/colblk"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/uring"
)

// blockMap is where a read-only store's sstables keep their data blocks:
// each file's data blocks in key order, by the last key each may hold
// (Pebble's separators). With it, the store finds the data block that
// holds a key without Pebble's read path, and GetMany and ScanMany
// (getmany.go) read the blocks of many keys, or spans of keys, in one
// submission to the ring, on the calling goroutine.
//
// A read-only store's files never change, so the map, made at open, holds
// for every snapshot. It answers a key only where exactly one file's key
// range covers it (the key cannot have a newer version in another level),
// that file is one it can read itself (columnar blocks, no blob files,
// no range deletions or range keys, not virtual) and the key's newest
// version there is a value in place (or a deletion, in a span). Every
// other key is Pebble's.
type blockMap struct {
	comparer *pebble.Comparer
	cmp      func(a, b []byte) int
	levels   [][]mappedFile // each level's files in key order
	files    []*mappedFile  // the files this map reads, to close
	schema   *colblk.KeySchema
	ring     *uring.Ring
	reads    *readCount
	served   atomic.Int64 // values getMany read: MappedReads
}

// mappedFile is one sstable of the map. A file of a level the map cannot
// read itself has no blocks: a key in its range is left to Pebble.
type mappedFile struct {
	smallest, largest []byte
	name              string
	file              vfs.File
	fd, dfd           uintptr // file's, and the file open with O_DIRECT or vfs.InvalidFd
	checksum          block.ChecksumType
	// seps holds the data blocks' separators back to back, sepEnd where
	// each ends. heads holds each separator's first 8 bytes as a number
	// (head), so that a search reads one array and compares whole
	// separators only among those that share their head. offs holds
	// where each block starts and, last, where the last one's trailer
	// ends: a file's data blocks lie back to back (mapFile leaves any
	// other file to Pebble), so each block's length is the distance to
	// the next, less its trailer. nil: the map does not read the file.
	seps   []byte
	sepEnd []uint32
	heads  []uint64
	tops   []uint64 // every headStride-th head
	offs   []uint64
	// diskRun counts the file's direct reads since one found its pages
	// in the page cache (checkCache); shared by the file's copies.
	diskRun *atomic.Int64
}

// checkAfter is how many reads of a file in a row must find nothing in
// the page cache before only one in checkAfter asks it: a file read
// direct stays out of it (the pages of a just-built index are what it
// holds), and asking costs a system call a block.
const checkAfter = 16

// checkCache reports whether the file's next direct read should ask the
// page cache first.
func (f *mappedFile) checkCache() bool {
	n := f.diskRun.Load()
	return n < checkAfter || n%checkAfter == 0
}

// readFrom notes where a direct read of the file was read from.
func (f *mappedFile) readFrom(cached bool) {
	if cached {
		f.diskRun.Store(0)
	} else {
		f.diskRun.Add(1)
	}
}

func (f *mappedFile) readable() bool { return f.offs != nil }

// blocks is how many data blocks the map knows of f.
func (f *mappedFile) blocks() int { return max(len(f.offs)-1, 0) }

// handle is where data block j of f lies.
func (f *mappedFile) handle(j int) block.Handle {
	return block.Handle{Offset: f.offs[j], Length: f.offs[j+1] - f.offs[j] - block.TrailerLen}
}

// The keys the map reads, [mappedFrom, mappedTo): the postings' and the
// tables' (format.SpacePostings and SpaceTables, one after the other),
// which cold queries read. A file with none of them is not mapped (the
// documents' records, read one at a time, stay Pebble's), so the map holds
// no more than it is used for.
var mappedFrom, mappedTo = format.SpacePrefix(format.SpacePostings), format.SpacePrefix(format.SpaceTables + 1)

// newBlockMap maps the store's files; direct reads what the page cache
// does not hold with O_DIRECT. A file it cannot map is left to Pebble,
// and a store it cannot list has no map (nil).
func (s *Store) newBlockMap(ring *uring.Ring, direct bool) *blockMap {
	levels, err := s.db.SSTables()
	ks, ok := s.opts.KeySchemas[s.opts.KeySchema]
	if err != nil || !ok {
		return nil
	}
	m := &blockMap{comparer: s.opts.Comparer, cmp: s.opts.Comparer.Compare, schema: ks, ring: ring, reads: &s.reads}
	for _, level := range levels {
		var lv []mappedFile
		for _, t := range level {
			f := mappedFile{smallest: slices.Clone(t.Smallest.UserKey), largest: slices.Clone(t.Largest.UserKey), fd: vfs.InvalidFd, dfd: vfs.InvalidFd,
				diskRun: new(atomic.Int64)}
			if !t.Virtual && m.cmp(f.largest, mappedFrom) >= 0 && m.cmp(f.smallest, mappedTo) < 0 {
				f.name = filepath.Join(s.dir, Dir, sstName(uint64(t.BackingSSTNum)))
				if err := s.mapFile(&f, ks.Name, direct); err != nil {
					// A file the map cannot read (damaged, say) is Pebble's,
					// whose reads report what is wrong where they meet it,
					// as without the map; Check names it.
					f.offs = nil
				}
			}
			lv = append(lv, f)
		}
		slices.SortFunc(lv, func(a, b mappedFile) int { return m.cmp(a.smallest, b.smallest) })
		m.levels = append(m.levels, lv)
	}
	for l := range m.levels {
		for i := range m.levels[l] {
			if f := &m.levels[l][i]; f.fd != vfs.InvalidFd {
				m.files = append(m.files, f)
			}
		}
	}
	return m
}

// mapFile reads the data blocks' separators and places of f's file, if
// the map can read its blocks itself, and opens it for the reads.
func (s *Store) mapFile(f *mappedFile, schema string, direct bool) error {
	vf, err := s.fs.Open(f.name)
	if err != nil {
		return err
	}
	rd, err := sstable.NewSimpleReadable(vf)
	if err != nil {
		vf.Close()
		return err
	}
	r, err := sstable.NewReader(context.Background(), rd, s.ReaderOptions())
	if err != nil {
		rd.Close()
		return fmt.Errorf("engine: reading %s: %w", f.name, err)
	}
	defer r.Close()
	format, err := r.TableFormat()
	if err != nil || format < sstable.TableFormatPebblev5 {
		return nil
	}
	props, err := r.ReadPropertiesBlock(context.Background(), nil)
	if err != nil {
		return fmt.Errorf("engine: reading %s: %w", f.name, err)
	}
	if props.KeySchemaName != schema {
		return nil
	}
	l, err := r.Layout()
	if err != nil {
		return fmt.Errorf("engine: reading %s: %w", f.name, err)
	}
	if l.BlobReferenceIndex.Length > 0 || l.RangeDel.Length > 0 || l.RangeKey.Length > 0 {
		return nil // values elsewhere, or keys that another entry hides
	}
	f.checksum = r.BlockReader().ChecksumType()
	// Sized for the file's data blocks, which its layout lists: a slice
	// grown by appending holds up to twice what it needs, for as long as
	// the store is open.
	n := len(l.Data)
	f.sepEnd, f.heads, f.offs = make([]uint32, 0, n), make([]uint64, 0, n), make([]uint64, 0, n+1)
	var end uint64 // where the last block's trailer ends
	var it colblk.IndexIter
	for _, ih := range l.Index {
		b := make([]byte, ih.Length+block.TrailerLen)
		if err := rd.ReadAt(context.Background(), b, int64(ih.Offset)); err != nil {
			return fmt.Errorf("engine: reading %s: the index block at %d: %w", f.name, ih.Offset, err)
		}
		if err := checkBlock(f, b, ih); err != nil {
			return err
		}
		if err := it.Init(s.opts.Comparer, b[:ih.Length], block.NoTransforms); err != nil {
			return corrupt(f, ih, err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			h, err := it.BlockHandleWithProperties()
			if err != nil {
				return corrupt(f, ih, err)
			}
			var ok bool
			if end, ok = f.appendBlock(it.Separator(), h.Handle, end); !ok {
				f.seps, f.sepEnd, f.heads, f.offs = nil, nil, nil, nil
				return nil // not back to back: Pebble's
			}
		}
		it.Close()
	}
	f.endBlocks(end)
	// Through the index's file system; one without descriptors (in
	// memory) leaves the file to Pebble.
	file, err := s.fs.Open(f.name)
	if err != nil {
		return err
	}
	if file.Fd() == vfs.InvalidFd {
		f.offs = nil
		return file.Close()
	}
	f.file, f.fd = file, file.Fd()
	if direct {
		// A file system without O_DIRECT (tmpfs) is read as without it.
		if dfd, err := uring.OpenDirect(f.name); err == nil {
			f.dfd = dfd
		}
	}
	return nil
}

// appendBlock adds data block h, whose separator is sep, to f's map, and
// returns where its trailer ends; end is where the block before it ended.
// It reports false, and adds nothing, if h does not start there: the map
// keeps offsets alone, so it reads only files whose data blocks lie back
// to back.
func (f *mappedFile) appendBlock(sep []byte, h block.Handle, end uint64) (uint64, bool) {
	if len(f.offs) > 0 && h.Offset != end {
		return end, false
	}
	f.seps = append(f.seps, sep...)
	f.sepEnd = append(f.sepEnd, uint32(len(f.seps)))
	f.heads = append(f.heads, head(sep))
	f.offs = append(f.offs, h.Offset)
	return h.Offset + h.Length + block.TrailerLen, true
}

// endBlocks closes f's map after its last data block, whose trailer ends
// at end (0 for a file without one: readable, no blocks).
func (f *mappedFile) endBlocks(end uint64) {
	f.offs = append(f.offs, end)
	f.seps = slices.Clone(f.seps)
	f.indexHeads()
}

// checkBlock checks a block read with its trailer against its checksum,
// and that it is not compressed (the store writes none).
func checkBlock(f *mappedFile, b []byte, h block.Handle) error {
	if err := block.ValidateChecksum(f.checksum, b, h); err != nil {
		return corrupt(f, h, err)
	}
	if block.CompressionIndicator(b[h.Length]) != block.NoCompressionIndicator {
		return corrupt(f, h, errors.New("compressed, which this store's blocks never are"))
	}
	return nil
}

func corrupt(f *mappedFile, h block.Handle, err error) error {
	return fmt.Errorf("%w: %s: the block at %d (%d bytes): %w", pebble.ErrCorruption, f.name, h.Offset, h.Length, err)
}

// close closes the files the map opened.
func (m *blockMap) close() error {
	var err error
	for _, f := range m.files {
		err = errors.Join(err, f.file.Close())
		if f.dfd != vfs.InvalidFd {
			err = errors.Join(err, uring.CloseDirect(f.dfd))
		}
	}
	m.files = nil
	return err
}

// only returns the one file whose range meets the key lo (hi nil) or the
// span [lo, hi), if the map reads it: where two files do, Pebble knows
// which holds the newer version. Level 0's files overlap one another, so
// every one of them is looked at; a deeper level's are in key order.
func (m *blockMap) only(lo, hi []byte) (*mappedFile, bool) {
	meets := func(f *mappedFile) bool {
		if hi == nil {
			return m.cmp(f.smallest, lo) <= 0 && m.cmp(f.largest, lo) >= 0
		}
		return m.cmp(f.smallest, hi) < 0 && m.cmp(f.largest, lo) >= 0
	}
	var found *mappedFile
	for l, lv := range m.levels {
		i := 0
		if l > 0 {
			i = sort.Search(len(lv), func(i int) bool { return m.cmp(lv[i].largest, lo) >= 0 })
		}
		for ; i < len(lv); i++ {
			f := &lv[i]
			if !meets(f) {
				if l > 0 {
					break // the rest lie past it
				}
				continue
			}
			if found != nil {
				return nil, false
			}
			found = f
		}
	}
	return found, found != nil && found.readable()
}

// locate returns the file and data block that hold key, if the map reads
// them itself.
func (m *blockMap) locate(key []byte) (*mappedFile, int, bool) {
	found, ok := m.only(key, nil)
	if !ok {
		return nil, 0, false
	}
	j := found.search(key)
	if j == found.blocks() {
		return nil, 0, false
	}
	return found, j, true
}

// search returns the first data block whose separator is at or above key
// (blocks() if none): the block that holds key, if any does. Both of
// the store's key orders are bytes.Compare's, and a lesser head is a
// lesser key in it.
func (f *mappedFile) search(key []byte) int {
	h := head(key)
	lo, hi := f.firstHead(h), len(f.heads)
	if h < math.MaxUint64 {
		hi = f.firstHead(h + 1)
	}
	// Among the separators with key's head (few, but a fingerprint stored
	// many times can fill blocks), the whole of each decides.
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if bytes.Compare(f.sep(mid), key) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// headStride is the heads between two of tops: a search of tops (a few
// kilobytes a file, which the processor's caches keep) leaves it one run
// of heads to search, a few cache lines.
const headStride = 32

// indexHeads sets tops from heads.
func (f *mappedFile) indexHeads() {
	f.tops = make([]uint64, 0, (len(f.heads)+headStride-1)/headStride)
	for i := 0; i < len(f.heads); i += headStride {
		f.tops = append(f.tops, f.heads[i])
	}
}

// firstHead returns the first block whose head is at or above v, or
// len(heads).
func (f *mappedFile) firstHead(v uint64) int {
	t := lowerBound(f.tops, 0, v) // heads[t*headStride] >= v, the one before < v
	lo, hi := 0, min(t*headStride, len(f.heads))
	if t > 0 {
		lo = (t-1)*headStride + 1
	}
	return lowerBound(f.heads[:hi], lo, v)
}

// lowerBound returns the first i >= from with a[i] >= v, or len(a).
func lowerBound(a []uint64, from int, v uint64) int {
	lo, hi := from, len(a)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if a[mid] < v {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// head is k's first 8 bytes, big-endian, padded with zeros: heads order
// as their keys do, or tie.
func head(k []byte) uint64 {
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

func (f *mappedFile) sep(j int) []byte {
	var from uint32
	if j > 0 {
		from = f.sepEnd[j-1]
	}
	return f.seps[from:f.sepEnd[j]]
}

// locateSpan returns the file and the data blocks [j0, j1] that hold the
// keys in [lo, hi), if the map reads them itself: one file covers all of
// the span and no other file any of it.
func (m *blockMap) locateSpan(lo, hi []byte) (*mappedFile, int, int, bool) {
	found, ok := m.only(lo, hi)
	if !ok {
		return nil, 0, 0, false
	}
	n := found.blocks()
	j0, j1 := found.search(lo), found.search(hi)
	return found, j0, min(j1, n-1), true
}

// MapBytes is the memory of the map of a read-only store's data blocks
// (0 without one): each mapped file's separators, heads and offsets.
func (s *Store) MapBytes() int64 {
	if s.blocks == nil {
		return 0
	}
	var n int64
	for _, f := range s.blocks.files {
		n += int64(cap(f.seps)) + int64(cap(f.sepEnd))*4 + int64(cap(f.heads)+cap(f.tops)+cap(f.offs))*8
	}
	return n
}

// MappedReads is how many values GetMany and ScanMany have read without
// Pebble.
func (s *Store) MappedReads() int64 {
	if s.blocks == nil {
		return 0
	}
	return s.blocks.served.Load()
}
