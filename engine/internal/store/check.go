package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// CheckFiles reads the store's own files below the engine's keys: the
// MANIFEST read to its end, every block of every live sstable read and its
// checksum verified (a query or a flush reads only the blocks it needs,
// and Pebble skips a filter block it cannot read), and sstables on disk
// that the MANIFEST does not list. Each damage found goes to bad (a
// corruption error naming the file and block); the unlisted files are
// returned, not counted as damage: a crash between a compaction and the
// deletion of its inputs leaves them too, and the next writable open
// deletes them. err is what stopped the check (ctx done, a listing that
// failed).
func (s *Store) CheckFiles(ctx context.Context, bad func(error)) (unlisted []string, err error) {
	pdir := filepath.Join(s.dir, Dir)
	if err := CheckManifest(s.fs, pdir); err != nil {
		bad(err)
	}
	levels, err := s.db.SSTables()
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, level := range levels {
		for _, t := range level {
			name := sstName(uint64(t.BackingSSTNum))
			if live[name] {
				continue
			}
			live[name] = true
			if err := s.checkSSTable(filepath.Join(pdir, name)); err != nil && !s.compactedAway(name, err) {
				bad(err)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	// A compaction's inputs stay on disk until the last reader of them is
	// done: a file counts only if it stays while Check waits.
	var stray []string
	for try := 0; ; try++ {
		names, err := s.fs.List(pdir)
		if err != nil {
			return nil, err
		}
		stray = stray[:0]
		for _, n := range names {
			if strings.HasSuffix(n, ".sst") && !live[n] {
				stray = append(stray, n)
			}
		}
		if len(stray) == 0 || try == 10 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	slices.Sort(stray)
	for _, n := range stray {
		unlisted = append(unlisted, filepath.Join(pdir, n))
	}
	return unlisted, nil
}

// compactedAway reports whether sstable n, which Check could not open,
// is gone because a compaction replaced it meanwhile: Pebble compacts
// while Check reads, and deletes a compaction's inputs once it is done.
func (s *Store) compactedAway(name string, err error) bool {
	if !errors.Is(err, os.ErrNotExist) {
		return false
	}
	levels, lerr := s.db.SSTables()
	if lerr != nil {
		return false
	}
	for _, level := range levels {
		for _, t := range level {
			if sstName(uint64(t.BackingSSTNum)) == name {
				return false
			}
		}
	}
	return true
}

// checkSSTable verifies the checksum of every block of the sstable at path.
func (s *Store) checkSSTable(path string) error {
	f, err := s.fs.Open(path)
	if err != nil {
		return format.Corrupt("sstable "+path, err)
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return format.Corrupt("sstable "+path, err)
	}
	r, err := sstable.NewReader(context.Background(), readable, sstable.ReaderOptions{
		Comparer: s.opts.Comparer, KeySchemas: s.opts.KeySchemas})
	if err != nil {
		readable.Close()
		return format.Corrupt("sstable "+path, err)
	}
	defer r.Close()
	if err := r.ValidateBlockChecksums(); err != nil {
		return format.Corrupt("sstable "+path, err)
	}
	// Pebble's validation leaves out the value blocks (values kept apart
	// from their keys) and their index: read them too, each checked.
	l, err := r.Layout()
	if err != nil {
		return format.Corrupt("sstable "+path, err)
	}
	for _, bh := range append(slices.Clone(l.ValueBlock), l.ValueIndex) {
		if bh.Length == 0 {
			continue
		}
		h, err := r.ReadValueBlockExternal(context.Background(), bh)
		if err != nil {
			return format.Corrupt(fmt.Sprintf("sstable %s, value block at offset %d", path, bh.Offset), err)
		}
		h.Release()
	}
	return nil
}

// sstName is the name of Pebble's sstable file number n.
func sstName(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) < 6 {
		s = strings.Repeat("0", 6-len(s)) + s
	}
	return s + ".sst"
}
