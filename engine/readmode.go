package engine

import (
	"fmt"
	"path/filepath"

	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/vfs"
)

// ReadMode says how an index reads the blocks of its files that no cache
// holds (Options.Reads).
type ReadMode int

// Read modes.
const (
	// ReadsAuto, the default, reads as ReadsDirect an index whose files
	// are, when it is opened, more than 1.2 times the memory the process
	// may use (GOMEMLIMIT, its cgroup's limit or the machine's): the page
	// cache could then hold only a part of it (autoDirect), and a cold
	// query's reads take less of the processor. Every other index is read
	// as ReadsBuffered. An index opened small and grown past the line is
	// read buffered until it is opened again.
	ReadsAuto ReadMode = iota
	// ReadsBuffered reads through the page cache, and on Linux where the
	// kernel allows io_uring through a ring, so that the reads a cold query
	// issues together reach the disk together: a goroutine blocked in
	// pread holds one of the runtime's Ps, and with few cores the others
	// wait for them (bench/results/journal.md, "The disk's round").
	ReadsBuffered
	// ReadsDirect reads, through the ring, what the page cache does not
	// hold with O_DIRECT, leaving the page cache as it was: for an index
	// much larger than the memory it may use, queried with the default
	// design's point reads, as databases' "direct reads" options are. A
	// buffered read that misses makes the kernel allocate, charge and
	// insert its pages on the reader's thread; on a small machine that is
	// much of a cold query's processor (docs/performance.md, "Cold queries
	// on the disk"). Pages cached otherwise are still read from memory, but
	// these reads never cache any: where memory could hold what the cache
	// does not, buffered reads do better. A writable index's compactions
	// still read their inputs through the page cache, with its read-ahead.
	// Read as ReadsBuffered where io_uring is refused, and from a file
	// system without O_DIRECT.
	ReadsDirect
	// ReadsBlocking reads with pread from the goroutine that needs the
	// block, through the page cache: no ring.
	ReadsBlocking
)

var readModeNames = [...]string{ReadsAuto: "auto", ReadsBuffered: "buffered", ReadsDirect: "direct", ReadsBlocking: "blocking"}

func (m ReadMode) String() string {
	if m < 0 || int(m) >= len(readModeNames) {
		return fmt.Sprintf("ReadMode(%d)", int(m))
	}
	return readModeNames[m]
}

// ParseReadMode parses a read mode's name: "auto", "buffered", "direct"
// or "blocking".
func ParseReadMode(s string) (ReadMode, error) {
	for m, name := range readModeNames {
		if s == name {
			return ReadMode(m), nil
		}
	}
	return 0, fmt.Errorf("engine: unknown read mode %q: want auto, buffered, direct or blocking", s)
}

// autoDirect reports whether ReadsAuto reads an index of size bytes
// direct under a memory limit: once the index is a fifth larger than the
// memory, so much of what buffered reads put in the page cache is
// reclaimed before it is read again that the kernel's charging and
// reclaiming of pages cost more than the hits save (docs/performance.md,
// "The default reads a large read-only index direct").
func autoDirect(size, limit int64) bool { return limit > 0 && size > limit+limit/5 }

// readsDirect says whether an index in dir opened with o reads with
// O_DIRECT (ReadsAuto's choice), and why, for the log.
func readsDirect(fs vfs.FS, dir string, o Options) (bool, []any) {
	switch o.Reads {
	case ReadsDirect:
		return true, []any{"why", "Options.Reads"}
	case ReadsAuto:
		size := store.DirSize(fs, filepath.Join(dir, store.Dir))
		return autoDirect(size, o.memLimit), []any{"why", "the index is more than 1.2 times the memory limit", "index bytes", size, "memory limit", o.memLimit}
	}
	return false, nil
}
