// Package wal is simhashdb's write-ahead log: append-only segment files of
// framed, checksummed records, with group commit (concurrent writers share
// one write and one fsync), replay that trims a torn tail and reports damage
// elsewhere with its location, and removal of segments once their contents
// are durable elsewhere.
//
// A record on disk is a frame (frame.go draws it byte by byte) around a
// payload: its length, its type, a checksum of the two and one of the
// payload.
//
// Segments are named by a sequence number, 000001.wal, 000002.wal, ...; a
// Log never appends to a segment it did not create, so after a crash a
// torn tail, if any, stays where it was, and Replay skips it.
package wal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// SyncMode says when a write is acknowledged.
type SyncMode uint8

const (
	// SyncAlways acknowledges a write once it is fsynced: it survives a
	// power loss. Concurrent writers share one fsync (group commit).
	SyncAlways SyncMode = iota
	// SyncInterval acknowledges a write once it is written to the operating
	// system, which survives a crash of the process (kill -9); a background
	// fsync at most Interval later makes it survive a power loss.
	SyncInterval
	// SyncNone acknowledges a write once it is written to the operating
	// system and fsyncs only when a segment is closed.
	SyncNone
)

// String returns the mode's name as ParseSyncMode reads it.
func (m SyncMode) String() string {
	switch m {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNone:
		return "none"
	}
	return "SyncMode(" + strconv.Itoa(int(m)) + ")"
}

// ParseSyncMode reads "always", "interval" or "none".
func ParseSyncMode(s string) (SyncMode, error) {
	for _, m := range []SyncMode{SyncAlways, SyncInterval, SyncNone} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("wal: unknown sync mode %q: want always, interval or none", s)
}

// MaxRecord is the largest payload a record may carry.
const MaxRecord = 64 << 20

// maxSpare bounds the write buffer a Log keeps for its next write.
const maxSpare = 1 << 20

// DefaultInterval is the fsync interval of SyncInterval.
const DefaultInterval = 100 * time.Millisecond

// Errors.
var (
	ErrClosed   = errors.New("wal: closed")
	ErrCorrupt  = errors.New("wal: corrupt record")
	ErrTooLarge = errors.New("wal: record too large")
)

// CorruptError locates damage in a segment that is not a torn tail.
type CorruptError struct {
	Path   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("wal: corrupt record in %s at offset %d: %s", e.Path, e.Offset, e.Reason)
}

// Unwrap makes the error match ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Options configure a Log.
type Options struct {
	// FS holds the segments; nil means the operating system's.
	FS   vfs.FS
	Sync SyncMode
	// Interval is the fsync interval of SyncInterval; 0 means DefaultInterval.
	Interval time.Duration
	// CutAt, if set, is where the complete records of the newest segment
	// end, for a log that replaces one whose write failed part way (see
	// Log.End): the new segment starts with a note of it, so that Replay
	// takes the bytes after it as a torn tail though records follow.
	CutAt Position
}

// LSN numbers records in the order they were appended, from 1, within one
// open Log.
type LSN uint64

// Log appends records to the newest segment of a directory.
type Log struct {
	dir  string
	opts Options

	mu       sync.Mutex
	cond     *sync.Cond
	f        vfs.File
	seg      uint64
	size     int64 // bytes in segments of this Log's directory, as far as known
	segEnd   int64 // bytes of the current segment written whole
	syncEnd  int64 // bytes of the current segment fsynced
	noteEnd  int64 // the syncEnd that the segment last noted (typeSynced)
	note     []byte
	buf      []byte
	spare    []byte
	appended LSN // last LSN appended to buf
	written  LSN // last LSN written to the OS
	synced   LSN // last LSN fsynced
	writing  bool
	err      error // sticky: once a write fails, the log refuses more
	closed   bool
	stop     chan struct{}
	done     chan struct{}
}

// SegmentName returns the file name of segment n.
func SegmentName(n uint64) string { return fmt.Sprintf("%06d.wal", n) }

// Segments returns the sequence numbers of the segments in dir, ascending.
// fs nil is the operating system's.
func Segments(fs vfs.FS, dir string) ([]uint64, error) {
	if fs == nil {
		fs = vfs.Default
	}
	return segments(fs, dir)
}

var errNotExist = os.ErrNotExist

func segments(fs vfs.FS, dir string) ([]uint64, error) {
	names, err := fs.List(dir)
	if err != nil {
		if errors.Is(err, errNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var segs []uint64
	for _, name := range names {
		name, ok := strings.CutSuffix(name, ".wal")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(name, 10, 64)
		if err != nil || n == 0 {
			continue
		}
		segs = append(segs, n)
	}
	slices.Sort(segs)
	return segs, nil
}

// Open creates dir if needed and starts a new segment after the newest one
// there. Open does not read old segments: Replay reads them, before or
// after Open (the engine opens first, so that replay may trim a torn tail
// in a segment no longer written to).
func Open(dir string, opts Options) (*Log, error) {
	if opts.Sync > SyncNone {
		return nil, fmt.Errorf("wal: invalid sync mode %d", opts.Sync)
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if err := opts.FS.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The folder's own entry must survive a power cut too, or every
	// segment would go with it.
	if err := syncDir(opts.FS, opts.FS.PathDir(dir)); err != nil {
		return nil, err
	}
	segs, err := segments(opts.FS, dir)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, stop: make(chan struct{}), done: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	for _, s := range segs {
		if st, err := opts.FS.Stat(opts.FS.PathJoin(dir, SegmentName(s))); err == nil {
			l.size += st.Size()
		}
	}
	newest, err := readNewest(opts.FS, dir)
	if err != nil {
		return nil, err
	}
	// Never reuse a number: a segment that was removed by hand stays
	// missing, and replay names it (see Replay).
	next := newest + 1
	if len(segs) > 0 {
		next = max(next, segs[len(segs)-1]+1)
	}
	if err := l.openSegment(next); err != nil {
		return nil, err
	}
	if opts.CutAt.Segment != 0 {
		l.buf = appendTear(l.buf, opts.CutAt)
	}
	if opts.Sync == SyncInterval {
		go l.syncLoop()
	} else {
		close(l.done)
	}
	return l, nil
}

func (l *Log) openSegment(n uint64) error {
	fs := l.opts.FS
	path := fs.PathJoin(l.dir, SegmentName(n))
	if _, err := fs.Stat(path); err == nil {
		return fmt.Errorf("wal: %s exists already", path)
	}
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if err := syncDir(fs, l.dir); err != nil {
		f.Close()
		return err
	}
	// After the segment exists, before anything is written to it: a
	// crash between the two leaves the marker one behind, never ahead.
	if err := writeNewest(fs, l.dir, n); err != nil {
		f.Close()
		return err
	}
	l.f, l.seg, l.segEnd, l.syncEnd, l.noteEnd = f, n, 0, 0, 0
	return nil
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Err returns the error that stopped the log, if a write failed: the log
// refuses appends from then on, and a new Log (Open) starts a new segment.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Segment returns the sequence number of the segment being written.
func (l *Log) Segment() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seg
}

// End returns where the records written whole to the current segment
// end: after a failed write, what follows may be a part of it.
func (l *Log) End() Position {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Position{l.seg, l.segEnd}
}

// Size returns the bytes in the directory's segments, including records
// appended but not yet written.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size + int64(len(l.buf))
}

// Append adds a record to the log's buffer and returns its LSN. The record is
// not durable until Wait(lsn) returns.
func (l *Log) Append(typ byte, payload []byte) (LSN, error) {
	if typ == 0 || typ > MaxType {
		return 0, fmt.Errorf("wal: record type %d: want 1..%d", typ, MaxType)
	}
	if len(payload) > MaxRecord {
		return 0, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(payload), MaxRecord)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if l.err != nil {
		return 0, l.err
	}
	l.buf = AppendRecord(l.buf, typ, payload)
	l.appended++
	return l.appended, nil
}

// Wait returns once the record lsn is durable as the sync mode promises. One
// waiter writes (and fsyncs) everything appended so far while the others
// wait for it: group commit.
func (l *Log) Wait(ctx context.Context, lsn LSN) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.acked() < lsn {
		if l.err != nil {
			return l.err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.writing {
			l.cond.Wait()
			continue
		}
		l.writeLocked(l.opts.Sync == SyncAlways)
	}
	return nil
}

// Write appends a record and waits for it.
func (l *Log) Write(ctx context.Context, typ byte, payload []byte) error {
	lsn, err := l.Append(typ, payload)
	if err != nil {
		return err
	}
	return l.Wait(ctx, lsn)
}

func (l *Log) acked() LSN {
	if l.opts.Sync == SyncAlways {
		return l.synced
	}
	return l.written
}

// writeLocked writes the buffer (and fsyncs) with l.mu released meanwhile;
// the caller holds l.mu and l.writing is false.
func (l *Log) writeLocked(sync bool) {
	l.writing = true
	buf, target := l.buf, l.appended
	l.buf = l.spare[:0]
	f := l.f
	// A write after a sync starts with a note of how far the segment is
	// durable, so that replay can tell damage to synced records from a
	// power cut's tear (cutByPower). It costs a small record a sync.
	note := l.note[:0]
	if l.syncEnd > l.noteEnd {
		note = appendSynced(note, l.syncEnd)
	}
	noted := l.syncEnd
	l.mu.Unlock()
	var err error
	if len(note) > 0 {
		_, err = f.Write(note)
	}
	if err == nil {
		_, err = f.Write(buf)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	l.mu.Lock()
	l.writing = false
	l.note = note
	if err != nil {
		l.err = fmt.Errorf("wal: writing %s: %w", SegmentName(l.seg), err)
	} else {
		n := int64(len(note) + len(buf))
		l.size += n
		l.segEnd += n
		l.written = target
		if len(note) > 0 {
			l.noteEnd = noted
		}
		if sync {
			l.synced = target
			l.syncEnd = l.segEnd
		}
	}
	if cap(buf) <= maxSpare {
		l.spare = buf
	} else {
		l.spare = nil // a large commit's buffer is not kept for the small ones after it
	}
	l.cond.Broadcast()
}

func (l *Log) syncLoop() {
	defer close(l.done)
	t := time.NewTicker(l.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			if !l.writing && l.err == nil && !l.closed && l.synced < l.appended {
				l.writeLocked(true)
			}
			l.mu.Unlock()
		}
	}
}

// WriteOut writes everything appended so far to the operating system,
// without an fsync: what a large commit calls between its records, so that
// the log never holds the whole commit in its buffer. It acknowledges
// nothing (Wait still waits for the sync mode's promise).
func (l *Log) WriteOut() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.outLocked(false)
}

// Sync writes and fsyncs everything appended so far.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.syncLocked()
}

func (l *Log) syncLocked() error { return l.outLocked(true) }

// outLocked writes everything appended so far, and fsyncs it when sync,
// waiting for a write under way first; the caller holds l.mu.
func (l *Log) outLocked(sync bool) error {
	for {
		if l.err != nil {
			return l.err
		}
		if l.closed {
			return ErrClosed
		}
		if l.writing {
			l.cond.Wait()
			continue
		}
		done := l.written
		if sync {
			done = l.synced
		}
		if done == l.appended {
			return nil
		}
		l.writeLocked(sync)
	}
}

// Rotate makes everything appended so far durable, closes the current
// segment and starts the next. It returns the number of the new segment:
// every record appended before Rotate is in an older one.
func (l *Log) Rotate() (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.syncLocked(); err != nil {
		return 0, err
	}
	if err := l.f.Close(); err != nil {
		l.err = fmt.Errorf("wal: closing %s: %w", SegmentName(l.seg), err)
		return 0, l.err
	}
	if err := l.openSegment(l.seg + 1); err != nil {
		l.err = fmt.Errorf("wal: starting segment %d: %w", l.seg+1, err)
		return 0, l.err
	}
	return l.seg, nil
}

// RemoveBefore deletes every segment older than seg, whose records the
// caller has made durable elsewhere.
func (l *Log) RemoveBefore(seg uint64) error {
	fs := l.opts.FS
	segs, err := segments(fs, l.dir)
	if err != nil {
		return err
	}
	for _, s := range segs {
		if s >= seg {
			break
		}
		path := fs.PathJoin(l.dir, SegmentName(s))
		st, err := fs.Stat(path)
		if err != nil {
			return err
		}
		if err := fs.Remove(path); err != nil {
			return err
		}
		l.mu.Lock()
		l.size -= st.Size()
		l.mu.Unlock()
	}
	return syncDir(fs, l.dir)
}

// Close makes everything appended durable and closes the segment.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	err := l.syncLocked()
	l.closed = true
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	return err
}
