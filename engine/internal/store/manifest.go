package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// CheckManifest reads the Pebble store's current MANIFEST, the log of
// which sstables make up the store, and refuses one damaged before its
// end. Pebble stops reading a MANIFEST at its first bad record and takes
// that for the end of the file (a write cut off by a crash), so a flipped
// byte in its middle opens the store at an older version, whose sstables
// the next writable open deletes. A store that exists must pass this
// before Pebble opens it.
func CheckManifest(fs vfs.FS, pdir string) error {
	desc, err := pebble.Peek(pdir, fs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("engine: reading %s: %w", pdir, err)
	}
	if !desc.Exists || desc.ManifestFilename == "" {
		return nil
	}
	f, err := fs.Open(desc.ManifestFilename)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("engine: reading %s: %w", desc.ManifestFilename, err)
	}
	at, reason := manifestEnd(data)
	if reason == "" {
		return nil
	}
	if next := nextManifestChunk(data, at+1); next >= 0 {
		return fmt.Errorf("%w: %s: bad record at offset %d (%s), with valid records from offset %d on: the store would open at an older version and lose what follows",
			format.ErrCorrupt, desc.ManifestFilename, at, reason, next)
	}
	return nil // a record cut off at the end: a crash while Pebble wrote it
}

// manifestEnd reads data's records in order and returns the offset of the
// first that is not intact and why ("" when all are).
func manifestEnd(data []byte) (int64, string) {
	rr := record.NewReader(bytes.NewReader(data), 0)
	for {
		off := rr.Offset()
		r, err := rr.Next()
		if err == nil {
			_, err = io.Copy(io.Discard, r)
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, io.EOF):
			return 0, ""
		}
		return off, err.Error()
	}
}

// The chunk layout of Pebble's record log (the LevelDB log format, in
// 32 KiB blocks): checksum (4 bytes, masked CRC-32C of the type and the
// payload), length (2), type (1: full, 2: first, 3: middle, 4: last).
const (
	manifestBlock       = 32 << 10
	manifestChunkHeader = 7
)

// nextManifestChunk returns the offset of the first intact chunk that
// starts a record at or after from, or -1: one there means that records
// follow the bad one.
func nextManifestChunk(data []byte, from int64) int64 {
	for o := from; o+manifestChunkHeader <= int64(len(data)); o++ {
		blockEnd := min((o/manifestBlock+1)*manifestBlock, int64(len(data)))
		h := data[o:]
		n := int64(binary.LittleEndian.Uint16(h[4:]))
		typ := h[6]
		if (typ != 1 && typ != 2) || n == 0 || o+manifestChunkHeader+n > blockEnd {
			continue
		}
		c := crc32.Checksum(h[6:manifestChunkHeader+n], crcTable)
		if binary.LittleEndian.Uint32(h) == (c>>15|c<<17)+0xa282ead8 {
			return o
		}
	}
	return -1
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)
