package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
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
	// Cut counts the records that looked intact after a power cut's tear
	// in the last segment (cutByPower), dropped with it: no sync covered
	// the tear (no record after it notes one), so none covered them, and
	// none was acknowledged.
	Cut int
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
//
// A from.Segment other than 0 must be in dir: a log that starts after it
// (or ends before from.Offset) has lost records that the caller has not
// stored elsewhere, and Replay refuses it with a *CorruptError naming both
// places. Only the last segment that holds records may end in a torn tail
// (or one whose next segment notes it was cut off there); unless
// read-only, Replay trims a torn tail, so that it stays the last.
func Replay(dir string, from Position, o ReplayOptions, fn func(end Position, typ byte, payload []byte) error) (ReplayStats, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	var st ReplayStats
	segs, err := segments(o.FS, dir)
	if err != nil {
		return st, err
	}
	segs = slices.DeleteFunc(segs, func(s uint64) bool { return s < from.Segment })
	if err := checkStart(o.FS, dir, from, segs); err != nil {
		return st, err
	}
	last, err := lastWithRecords(o.FS, dir, segs)
	if err != nil {
		return st, err
	}
	newest, err := readNewest(o.FS, dir)
	if err != nil {
		return st, err
	}
	missing := firstMissing(segs, newest)
	if missing != 0 && o.Recovery != RecoverPointInTime {
		return st, &CorruptError{Path: o.FS.PathJoin(dir, SegmentName(missing)), Reason: fmt.Sprintf(
			"the segment is missing, and the log went on to segment %d: the records in it are lost (restore it, or open with point-in-time recovery to keep the log up to it)",
			max(newest, segs[len(segs)-1]))}
	}
	stop := false // point in time: the rest of the log is discarded
	for i, s := range segs {
		if missing != 0 && s > missing && !stop {
			stop = true
			if err := discardMissing(o, &st, dir, missing); err != nil {
				return st, err
			}
		}
		path := o.FS.PathJoin(dir, SegmentName(s))
		data, err := readFile(o.FS, path)
		if err != nil {
			return st, err
		}
		st.Segments++
		start := int64(0)
		if s == from.Segment {
			start = from.Offset
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
		if s == last && cutByPower(rest, end) {
			st.Torn += int64(len(rest))
			st.Cut += intactAfter(rest)
			if !o.ReadOnly {
				if err := trim(o.FS, path, end); err != nil {
					return st, fmt.Errorf("wal: trimming the torn tail of %s: %w", path, err)
				}
			}
			continue
		}
		reason, torn := classify(rest)
		nothingAfter := tornTail(rest) // nothing valid after it in this segment
		if syncedPast(rest, end) {
			reason += ", and a later record notes the segment synced past it"
		}
		if torn && nothingAfter && s != last {
			if i+1 < len(segs) && noted(o.FS, dir, segs[i+1], Position{s, end}) {
				st.Torn += int64(len(rest))
				continue
			}
			torn, nothingAfter = false, false
			reason += fmt.Sprintf(", and segment %s after it holds records", SegmentName(segs[i+1]))
		}
		switch {
		case torn && nothingAfter:
			st.Torn += int64(len(rest))
			if !o.ReadOnly {
				if err := trim(o.FS, path, end); err != nil {
					return st, fmt.Errorf("wal: trimming the torn tail of %s: %w", path, err)
				}
			}
		case o.Recovery == RecoverStrict:
			return st, &CorruptError{Path: path, Offset: end, Reason: reason + " (strict recovery refuses to discard it)"}
		case o.Recovery == RecoverTail && (!nothingAfter || s != last):
			return st, &CorruptError{Path: path, Offset: end, Reason: reason + ", with valid records after it"}
		default:
			stop = o.Recovery == RecoverPointInTime
			if err := discard(o, &st, path, Position{s, end}, rest, reason); err != nil {
				return st, err
			}
		}
	}
	if missing != 0 && !stop {
		if err := discardMissing(o, &st, dir, missing); err != nil {
			return st, err
		}
	}
	return st, nil
}

// discardMissing reports segment seg as missing and, unless read-only,
// puts an empty one in its place, so that a later replay finds the log
// whole again, and an empty quarantine file beside it, so that the loss
// stays noticed (Quarantined) until removed by hand.
func discardMissing(o ReplayOptions, st *ReplayStats, dir string, seg uint64) error {
	path := o.FS.PathJoin(dir, SegmentName(seg))
	d := Damage{Path: path, At: Position{seg, 0}, Reason: "the segment is missing"}
	if !o.ReadOnly {
		d.Quarantine = fmt.Sprintf("%s-0%s", path, quarantineSuffix)
		if err := writeFile(o.FS, d.Quarantine, nil); err != nil {
			return fmt.Errorf("wal: noting the missing segment %s: %w", path, err)
		}
		if err := writeFile(o.FS, path, nil); err != nil {
			return fmt.Errorf("wal: replacing the missing segment %s: %w", path, err)
		}
	}
	st.Damage = append(st.Damage, d)
	return nil
}

// CheckStart returns the *CorruptError Replay would give, without reading
// a record, if the log in dir does not hold from (its segment is missing,
// or shorter than its offset): a caller that would change anything on
// opening checks first. fs nil is the operating system's.
func CheckStart(fs vfs.FS, dir string, from Position) error {
	if fs == nil {
		fs = vfs.Default
	}
	segs, err := segments(fs, dir)
	if err != nil {
		return err
	}
	return checkStart(fs, dir, from, slices.DeleteFunc(segs, func(s uint64) bool { return s < from.Segment }))
}

// checkStart refuses a log that does not hold from: segs are the segments
// from from.Segment on.
func checkStart(fs vfs.FS, dir string, from Position, segs []uint64) error {
	if from.Segment == 0 {
		return nil
	}
	path := fs.PathJoin(dir, SegmentName(from.Segment))
	if len(segs) == 0 || segs[0] != from.Segment {
		if len(segs) == 0 && from == (Position{Segment: 1}) {
			return nil // a new log that has not been opened yet
		}
		have := "no segment from it on"
		if len(segs) > 0 {
			have = "the next is " + SegmentName(segs[0])
		}
		return &CorruptError{Path: path, Offset: from.Offset, Reason: fmt.Sprintf(
			"replay must start in segment %d at offset %d, which is missing (%s): the records between are lost, or the state that named this position is older than the log", from.Segment, from.Offset, have)}
	}
	info, err := fs.Stat(path)
	if err != nil {
		return err
	}
	if info.Size() < from.Offset {
		return &CorruptError{Path: path, Offset: from.Offset, Reason: fmt.Sprintf(
			"replay must start at offset %d, but the segment holds %d bytes", from.Offset, info.Size())}
	}
	return nil
}

// lastWithRecords returns the last of segs that is not empty (0 if none).
func lastWithRecords(fs vfs.FS, dir string, segs []uint64) (uint64, error) {
	for i := len(segs) - 1; i >= 0; i-- {
		info, err := fs.Stat(fs.PathJoin(dir, SegmentName(segs[i])))
		if err != nil {
			return 0, err
		}
		if info.Size() > 0 {
			return segs[i], nil
		}
	}
	return 0, nil
}

// noted reports whether segment next starts with the note that the segment
// before it was cut off at or before at.
func noted(fs vfs.FS, dir string, next uint64, at Position) bool {
	f, err := fs.Open(fs.PathJoin(dir, SegmentName(next)))
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, HeaderLen+2*binary.MaxVarintLen64)
	n, _ := io.ReadFull(f, head)
	fr, bad := frameAt(head[:n])
	if bad != "" || fr.typ != typeTear {
		return false
	}
	p, ok := parseTear(fr.payload)
	return ok && p.Segment == at.Segment && p.Offset <= at.Offset
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
// returns how many it read and where it stopped. The log's own notes are
// not handed to fn.
func (s *segScan) scan(off int64) (int, int64, error) {
	n := 0
	for off < int64(len(s.data)) {
		f, bad := frameAt(s.data[off:])
		if bad != "" {
			return n, off, nil
		}
		end := off + int64(f.size())
		if f.typ == typeTear || f.typ == typeSynced {
			off = end
			continue
		}
		if err := s.fn(Position{s.seg, end}, f.typ, f.payload); err != nil {
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

// intactAfter counts the records that look intact after the start of
// rest, each found where the one before it ends.
func intactAfter(rest []byte) int {
	n := 0
	for o := 1; o+headerLenV1 <= len(rest); o++ {
		if f, bad := frameAt(rest[o:]); bad == "" {
			n++
			o += f.size() - 1
		}
	}
	return n
}

// tornTail reports whether no valid record starts anywhere after the
// start of rest. (A record found there, checksum and all, means
// acknowledged writes follow the damage.)
func tornTail(rest []byte) bool {
	for o := 1; o+headerLenV1 <= len(rest); o++ {
		if _, bad := frameAt(rest[o:]); bad == "" {
			return false
		}
	}
	return true
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
