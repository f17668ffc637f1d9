package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// ReplayStats says what Replay read.
type ReplayStats struct {
	Segments int
	Records  int
	// Trimmed is the number of bytes of torn tails cut off (or, read-only,
	// ignored).
	Trimmed int64
}

// Replay calls fn for every record of the segments in dir numbered from on,
// in order. A torn tail (an incomplete last record, or a damaged one with
// nothing valid after it) is a write that was never acknowledged: Replay
// truncates the segment there, unless readOnly. Damage with valid data after
// it is a *CorruptError naming the file and offset; so is a record fn
// rejects.
func Replay(dir string, from uint64, readOnly bool, fn func(typ byte, payload []byte) error) (ReplayStats, error) {
	var st ReplayStats
	segs, err := Segments(dir)
	if err != nil {
		return st, err
	}
	for _, s := range segs {
		if s < from {
			continue
		}
		path := filepath.Join(dir, SegmentName(s))
		data, err := os.ReadFile(path)
		if err != nil {
			return st, err
		}
		st.Segments++
		n, good, err := scan(path, data, fn)
		st.Records += n
		if err != nil {
			return st, err
		}
		if good < int64(len(data)) {
			st.Trimmed += int64(len(data)) - good
			if !readOnly {
				if err := os.Truncate(path, good); err != nil {
					return st, fmt.Errorf("wal: trimming the torn tail of %s: %w", path, err)
				}
			}
		}
	}
	return st, nil
}

// scan reads the records of one segment and returns how many it read and
// the length of the valid prefix.
func scan(path string, data []byte, fn func(typ byte, payload []byte) error) (int, int64, error) {
	n, off := 0, 0
	for off < len(data) {
		rest := data[off:]
		plen, bad := check(rest)
		if bad != "" {
			if tornTail(rest) {
				return n, int64(off), nil
			}
			return n, int64(off), &CorruptError{Path: path, Offset: int64(off), Reason: bad}
		}
		if err := fn(rest[4], rest[HeaderLen:HeaderLen+plen]); err != nil {
			var ce *CorruptError
			if errors.As(err, &ce) {
				return n, int64(off), err
			}
			return n, int64(off), &CorruptError{Path: path, Offset: int64(off), Reason: err.Error()}
		}
		n++
		off += HeaderLen + plen
	}
	return n, int64(off), nil
}

// tornTail reports whether damage at the start of rest is the tail of an
// interrupted write rather than corruption: no valid record starts anywhere
// after it. (A record found there, checksum and all, means acknowledged
// writes follow the damage.)
func tornTail(rest []byte) bool {
	for o := 1; o+HeaderLen <= len(rest); o++ {
		if _, bad := check(rest[o:]); bad == "" {
			return false
		}
	}
	return true
}

// check returns the payload length of the record at rest[0], or why it is
// not an intact record.
func check(rest []byte) (int, string) {
	if len(rest) < HeaderLen {
		return 0, "truncated header"
	}
	plen := int(binary.LittleEndian.Uint32(rest))
	switch {
	case plen > MaxRecord:
		return 0, fmt.Sprintf("length %d exceeds %d", plen, MaxRecord)
	case len(rest)-HeaderLen < plen:
		return 0, "truncated payload"
	case rest[4] == 0:
		return 0, "record type 0"
	}
	want := binary.LittleEndian.Uint32(rest[5:])
	if got := crc32.Update(crc32.Checksum(rest[:5], castagnoli), castagnoli, rest[HeaderLen:HeaderLen+plen]); got != want {
		return 0, fmt.Sprintf("checksum %08x, computed %08x", want, got)
	}
	return plen, ""
}
