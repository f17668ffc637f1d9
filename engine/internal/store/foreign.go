package store

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// ownStore refuses a pebble/ folder that is not a simhashdb store, before
// anything writes into it: a writable Pebble open of another program's
// store would rewrite its MANIFEST and delete what it takes for obsolete
// files. order is the store's comparer (storedOrder): KeyOrder names ours;
// a store with Pebble's default one is ours only if it holds the engine's
// format key (indexes made before KeyOrder), which a read-only open finds.
func ownStore(fs vfs.FS, pdir string, order *pebble.Comparer) error {
	desc, err := pebble.Peek(pdir, fs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotIndex, pdir, err)
	}
	if !desc.Exists {
		names, err := fs.List(pdir)
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		var manifests []string
		for _, n := range names {
			if strings.HasPrefix(n, "MANIFEST-") {
				manifests = append(manifests, n)
			}
		}
		if len(manifests) > 0 {
			// Pebble's files without the marker that names the current
			// MANIFEST: a store damaged, not a foreign folder.
			slices.Sort(manifests)
			return fmt.Errorf("%w: %s holds Pebble's files (%s) but no marker.manifest.* file naming the current MANIFEST: the index is damaged (the marker was removed). Restore the folder from a copy; failing that, a marker named marker.manifest.000001.%s (an empty file) names the newest one, which may be the current",
				format.ErrCorrupt, pdir, strings.Join(manifests, ", "), manifests[len(manifests)-1])
		}
		if len(names) > 0 {
			return fmt.Errorf("%w: %s holds %d files (such as %q) but no Pebble store: not a simhashdb index, left as it is", ErrNotIndex, pdir, len(names), names[0])
		}
		return nil // an index whose creation stopped before Pebble wrote a file
	}
	if order == KeyOrder {
		return nil
	}
	db, err := pebble.Open(pdir, &pebble.Options{FS: fs, ReadOnly: true, Logger: quietPebble{}})
	if err != nil {
		return fmt.Errorf("%w: %s holds a Pebble store that cannot be read as a simhashdb index, left as it is: %w", ErrNotIndex, pdir, err)
	}
	defer db.Close()
	_, c, err := db.Get(format.MetaFormat)
	if errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("%w: %s holds a Pebble store of another program (no simhashdb format key), left as it is", ErrNotIndex, pdir)
	}
	if err != nil {
		return fmt.Errorf("engine: reading %s: %w", pdir, err)
	}
	return c.Close()
}

// quietPebble drops the messages of the read-only open that ownStore makes.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
