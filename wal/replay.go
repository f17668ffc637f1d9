package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Position is a place in the log: a byte offset in a segment.
type Position struct {
	Segment uint64
	Offset  int64
}

// Recovery says what Replay does with a damaged record: a complete frame
// (its length fits in the segment) whose checksum, type or length is
// wrong. An incomplete frame at the end of a segment is a torn tail, a
// write that never completed and so was never acknowledged: every mode
// skips it and counts its bytes.
type Recovery uint8

const (
	// RecoverTail discards a damaged record when nothing valid follows it
	// in its segment (it may be a write that was in flight, or an
	// acknowledged one that the disk damaged: the two look alike), and
	// reports it: a Damage in the stats, the discarded bytes kept in a
	// quarantine file beside the segment (see Quarantined). Damage with
	// valid records after it is a *CorruptError.
	RecoverTail Recovery = iota
	// RecoverStrict refuses any damaged record with a *CorruptError.
	RecoverStrict
	// RecoverPointInTime replays up to the first damaged record and
	// discards the rest of the log, reported and quarantined as by
	// RecoverTail: the way to open a log damaged in its middle.
	RecoverPointInTime
)

// String returns the mode's name as ParseRecovery reads it.
func (r Recovery) String() string {
	switch r {
	case RecoverTail:
		return "tail"
	case RecoverStrict:
		return "strict"
	case RecoverPointInTime:
		return "point-in-time"
	}
	return "Recovery(" + strconv.Itoa(int(r)) + ")"
}

// ParseRecovery reads "tail", "strict" or "point-in-time".
func ParseRecovery(s string) (Recovery, error) {
	for _, r := range []Recovery{RecoverTail, RecoverStrict, RecoverPointInTime} {
		if s == r.String() {
			return r, nil
		}
	}
	return 0, fmt.Errorf("wal: unknown recovery mode %q: want tail, strict or point-in-time", s)
}

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// FS holds the segments; nil means the operating system's.
	FS       vfs.FS
	Recovery Recovery
	// ReadOnly reports damage without quarantining or trimming it.
	ReadOnly bool
}

// ReplayStats say what Replay read and what it discarded.
type ReplayStats struct {
	Segments int
	Records  int
	// Torn counts the bytes of torn tails skipped.
	Torn int64
	// Damage lists the damaged records discarded, with what followed them.
	Damage []Damage
}

// Damage is a stretch of the log that Replay discarded because a record
// in it was damaged.
type Damage struct {
	Path   string
	At     Position
	Bytes  int64  // discarded, from At to the end of the segment
	Reason string // what was wrong with the record at At
	// Quarantine is the file that keeps the discarded bytes ("" when
	// read-only).
	Quarantine string
}

func (d Damage) String() string {
	s := fmt.Sprintf("%s at offset %d: %s; %d bytes discarded", d.Path, d.At.Offset, d.Reason, d.Bytes)
	if d.Quarantine != "" {
		s += ", kept in " + d.Quarantine
	}
	return s
}

// quarantineSuffix ends the names of the files that keep discarded bytes.
const quarantineSuffix = ".damaged"

// Quarantined returns the quarantine files in dir: each holds bytes that
// Replay discarded from a damaged segment, named by the segment and the
// offset where they began. They stay until removed by hand, so that the
// damage is noticed (the engine's Check fails while one is there).
func Quarantined(fs vfs.FS, dir string) ([]string, error) {
	if fs == nil {
		fs = vfs.Default
	}
	names, err := fs.List(dir)
	if err != nil {
		if errors.Is(err, errNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, quarantineSuffix) {
			out = append(out, fs.PathJoin(dir, n))
		}
	}
	return out, nil
}

// Replay calls fn for every record of the segments in dir from position
// from on, in order, with the position just after the record (where a
// replay that had applied it would start again). An error of fn ends the
// replay; one that matches ErrCorrupt (a record fn cannot decode) comes
// back as a *CorruptError naming the file and offset. Damage is handled as
// o.Recovery says.
func Replay(dir string, from Position, o ReplayOptions, fn func(end Position, typ byte, payload []byte) error) (ReplayStats, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	var st ReplayStats
	segs, err := segments(o.FS, dir)
	if err != nil {
		return st, err
	}
	stop := false // point in time: the rest of the log is discarded
	for _, s := range segs {
		if s < from.Segment {
			continue
		}
		path := o.FS.PathJoin(dir, SegmentName(s))
		data, err := readFile(o.FS, path)
		if err != nil {
			return st, err
		}
		st.Segments++
		start := int64(0)
		if s == from.Segment {
			start = min(from.Offset, int64(len(data)))
		}
		if stop {
			if err := discard(o, &st, path, Position{s, start}, data[start:], "after damage earlier in the log"); err != nil {
				return st, err
			}
			continue
		}
		sc := segScan{seg: s, path: path, data: data, fn: fn}
		n, end, err := sc.scan(start)
		st.Records += n
		if err != nil {
			return st, err
		}
		if end == int64(len(data)) {
			continue
		}
		rest := data[end:]
		reason, torn := classify(rest)
		last := tornTail(rest) // nothing valid after it
		switch {
		case torn && last:
			st.Torn += int64(len(rest))
		case o.Recovery == RecoverStrict:
			return st, &CorruptError{Path: path, Offset: end, Reason: reason + " (strict recovery refuses to discard it)"}
		case o.Recovery == RecoverTail && !last:
			return st, &CorruptError{Path: path, Offset: end, Reason: reason + ", with valid records after it"}
		default:
			stop = o.Recovery == RecoverPointInTime
			if err := discard(o, &st, path, Position{s, end}, rest, reason); err != nil {
				return st, err
			}
		}
	}
	return st, nil
}

// discard reports the bytes rest of a segment at at as damage and, unless
// read-only, keeps them in a quarantine file and trims the segment there,
// so that a later replay does not find them again.
func discard(o ReplayOptions, st *ReplayStats, path string, at Position, rest []byte, reason string) error {
	if len(rest) == 0 {
		return nil
	}
	d := Damage{Path: path, At: at, Bytes: int64(len(rest)), Reason: reason}
	if !o.ReadOnly {
		d.Quarantine = fmt.Sprintf("%s-%d%s", path, at.Offset, quarantineSuffix)
		if err := writeFile(o.FS, d.Quarantine, rest); err != nil {
			return fmt.Errorf("wal: keeping the damaged bytes of %s: %w", path, err)
		}
		if err := trim(o.FS, path, at.Offset); err != nil {
			return fmt.Errorf("wal: trimming %s: %w", path, err)
		}
	}
	st.Damage = append(st.Damage, d)
	return nil
}

// segScan reads the records of one segment.
type segScan struct {
	seg  uint64
	path string
	data []byte
	fn   func(end Position, typ byte, payload []byte) error
}

// scan reads records from off on, up to the first that is not intact, and
// returns how many it read and where it stopped.
func (s *segScan) scan(off int64) (int, int64, error) {
	n := 0
	for off < int64(len(s.data)) {
		rest := s.data[off:]
		plen, bad := check(rest)
		if bad != "" {
			return n, off, nil
		}
		end := off + HeaderLen + int64(plen)
		if err := s.fn(Position{s.seg, end}, rest[4], rest[HeaderLen:HeaderLen+plen]); err != nil {
			var ce *CorruptError
			if errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				return n, off, err
			}
			return n, off, &CorruptError{Path: s.path, Offset: off, Reason: err.Error()}
		}
		n++
		off = end
	}
	return n, off, nil
}

// classify says what is wrong with the record at rest[0], and whether it
// looks like a torn tail: a frame cut off by the end of the segment, or
// zeros to the end (space a file system allocated but a crash left
// unwritten). It is one only if no valid record follows (tornTail).
func classify(rest []byte) (reason string, torn bool) {
	_, reason = check(rest)
	switch reason {
	case "truncated header", "truncated payload":
		return reason, true
	}
	return reason, len(bytes.Trim(rest, "\x00")) == 0
}

// tornTail reports whether no valid record starts anywhere after the
// start of rest. (A record found there, checksum and all, means
// acknowledged writes follow the damage.)
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

// readFile returns the contents of path.
func readFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// writeFile writes data to a new file at path, durably.
func writeFile(fs vfs.FS, path string, data []byte) error {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(fs, fs.PathDir(path))
	}
	return err
}

// trim cuts the segment at path to its first size bytes: a copy of them
// renamed over it, which a crash leaves either whole or not made.
func trim(fs vfs.FS, path string, size int64) error {
	data, err := readFile(fs, path)
	if err != nil {
		return err
	}
	tmp := path + ".trim"
	if err := writeFile(fs, tmp, data[:min(size, int64(len(data)))]); err != nil {
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(fs, fs.PathDir(path))
}
