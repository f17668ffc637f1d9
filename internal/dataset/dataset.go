// Package dataset reads the records of the datasets users bring: JSON lines
// (plain, gzip or zstd) and Parquet, each record a document whose text,
// id and name are fields named by the caller. A file's format is told by
// its first bytes, not its name. Records stream in file order in bounded
// memory whatever the file's size: a JSON line is held one at a time (at
// most Options.MaxRecord bytes), a Parquet file a page of its columns at a
// time. A bad record is a *RecordError that names the file and the line
// (or row group and row) and the field, and reading goes on past it.
package dataset

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
)

// Fields names the fields of a record that make a document.
type Fields struct {
	// Text is the document's text, a string; "text" if empty.
	Text string
	// ID is the document's id, "id" if empty, "-" for none: an integer
	// (or a string of digits) is the id; another string is the record's
	// Key. A record without it has neither.
	ID string
	// Name is the document's name, none if empty: a string, or a number
	// written as JSON writes it.
	Name string
}

func (f Fields) withDefaults() Fields {
	if f.Text == "" {
		f.Text = "text"
	}
	if f.ID == "" {
		f.ID = "id"
	}
	return f
}

// Record is one record of a dataset as a document.
type Record struct {
	// Place names the record: "FILE:LINE" for JSON lines, "FILE: row
	// group G, row R" for Parquet (both counted from 1).
	Place string
	// Ordinal is the record's position in its file, from 1, bad records
	// and skipped lines counted (a line number for JSON lines).
	Ordinal int64
	Text    string
	// ID is the id field's integer, when HasID.
	ID    uint64
	HasID bool
	// Key is the id field's value when it is a string that is not an
	// integer.
	Key  string
	Name string
}

// RecordError is a record that makes no document; the records after it
// are read.
type RecordError struct {
	Place string
	Err   error
}

func (e *RecordError) Error() string { return fmt.Sprintf("%s: %v", e.Place, e.Err) }
func (e *RecordError) Unwrap() error { return e.Err }

// ErrField is the error of a record whose field is missing or not of its
// kind (errors.Is through a RecordError).
var ErrField = errors.New("dataset: bad field")

// ErrTooLarge is the error of a record longer than Options.MaxRecord.
var ErrTooLarge = errors.New("dataset: record too large")

// DefaultMaxRecord is the longest JSON line read by default.
const DefaultMaxRecord = 64 << 20

// Options are how a dataset is read.
type Options struct {
	Fields Fields
	// MaxRecord is the longest JSON line, DefaultMaxRecord if 0: a longer
	// one is a RecordError (ErrTooLarge) and is skipped.
	MaxRecord int
}

// Format is a dataset's format, told by its first bytes.
type Format int

const (
	JSONLines Format = iota
	GzipJSONLines
	ZstdJSONLines
	Parquet
)

func (f Format) String() string {
	return [...]string{"JSON lines", "gzip JSON lines", "zstd JSON lines", "Parquet"}[f]
}

// Sniff tells a dataset's format from its first bytes.
func Sniff(head []byte) Format {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return GzipJSONLines
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return ZstdJSONLines
	case bytes.HasPrefix(head, []byte("PAR1")):
		return Parquet
	}
	return JSONLines
}

// File is an open dataset file.
type File struct {
	name   string
	f      *os.File
	size   int64
	format Format
	read   countingReader
}

// Open opens the dataset in path and tells its format.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
	}
	head := make([]byte, 4)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return &File{name: path, f: f, size: fi.Size(), format: Sniff(head[:n])}, nil
}

// Format is the file's format.
func (f *File) Format() Format { return f.format }

// Size is the file's size in bytes.
func (f *File) Size() int64 { return f.size }

// Read is the bytes of the file read so far (compressed, for a compressed
// file): its progress against Size.
func (f *File) Read() int64 { return f.read.n.Load() }

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Records returns the file's records in order. A *RecordError is yielded
// for each bad record and reading goes on; any other error ends it.
func (f *File) Records(o Options) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for it, err := range f.Items(o) {
			if err != nil {
				if !yield(Record{}, err) {
					return
				}
				continue
			}
			if !yield(it.Record()) {
				return
			}
		}
	}
}

// Item is a record as read, its fields not yet made a Record: a JSON
// line, or a Parquet row. Items are read in order by one goroutine and
// made records by many (Record).
type Item struct {
	Place   string
	Ordinal int64
	// Line is a JSON line's bytes, the Item's own.
	Line   []byte
	fields Fields
	// A Parquet row, already read.
	row    parquet.Row
	rec    Record
	recErr error
}

// Record makes the item a record; a bad one is a *RecordError.
func (it Item) Record() (Record, error) {
	rec, err := it.rec, it.recErr
	if it.row == nil {
		rec, err = ParseJSON(it.Line, it.fields)
	}
	rec.Place, rec.Ordinal = it.Place, it.Ordinal
	if err != nil {
		return rec, &RecordError{Place: it.Place, Err: err}
	}
	return rec, nil
}

// Row is a Parquet item's row (nil for a JSON line), the Item's own.
func (it Item) Row() parquet.Row { return it.row }

// Items returns the file's records as read, in order. A *RecordError is
// yielded for a line too long to hold, and reading goes on; any other
// error ends them.
func (f *File) Items(o Options) iter.Seq2[Item, error] {
	o.Fields = o.Fields.withDefaults()
	if o.MaxRecord <= 0 {
		o.MaxRecord = DefaultMaxRecord
	}
	if f.format == Parquet {
		return f.parquetItems(o)
	}
	return func(yield func(Item, error) bool) {
		f.read.r = f.f
		var r io.Reader = &f.read
		switch f.format {
		case GzipJSONLines:
			z, err := gzip.NewReader(bufio.NewReaderSize(r, 1<<16))
			if err != nil {
				yield(Item{}, fmt.Errorf("%s: %w", f.name, err))
				return
			}
			defer z.Close()
			r = z
		case ZstdJSONLines:
			z, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<27))
			if err != nil {
				yield(Item{}, fmt.Errorf("%s: %w", f.name, err))
				return
			}
			defer z.Close()
			r = z
		}
		for line, err := range Lines(r, f.name, o.MaxRecord) {
			if err != nil {
				if !yield(Item{}, err) {
					return
				}
				continue
			}
			it := Item{Place: line.Place(), Ordinal: line.N, Line: bytes.Clone(line.Bytes), fields: o.Fields}
			if !yield(it, nil) {
				return
			}
		}
	}
}

// Line is a line of JSON lines: its bytes (without the newline), valid
// until the next, and its number.
type Line struct {
	File  string
	N     int64
	Bytes []byte
}

// Place is "FILE:LINE".
func (l Line) Place() string { return l.File + ":" + strconv.FormatInt(l.N, 10) }

// Lines returns r's lines that hold anything but white space, numbered
// from 1. A line longer than max is a *RecordError (ErrTooLarge), skipped
// without being held; a read error ends them, naming the file.
func Lines(r io.Reader, name string, max int) iter.Seq2[Line, error] {
	return func(yield func(Line, error) bool) {
		br := bufio.NewReaderSize(r, 1<<16)
		var buf []byte
		var n int64
		for {
			n++
			buf = buf[:0]
			over := false
			var err error
			for {
				var chunk []byte
				chunk, err = br.ReadSlice('\n')
				if !over {
					if len(buf)+len(chunk) > max+1 { // +1: the newline
						over, buf = true, buf[:0]
					} else {
						buf = append(buf, chunk...)
					}
				}
				if err != bufio.ErrBufferFull {
					break
				}
			}
			if err != nil && err != io.EOF {
				yield(Line{}, fmt.Errorf("%s: line %d: %w", name, n, err))
				return
			}
			switch {
			case over:
				if !yield(Line{}, &RecordError{Place: name + ":" + strconv.FormatInt(n, 10), Err: fmt.Errorf("%w: longer than %d bytes", ErrTooLarge, max)}) {
					return
				}
			case len(bytes.TrimSpace(buf)) > 0:
				if !yield(Line{File: name, N: n, Bytes: bytes.TrimRight(buf, "\r\n")}, nil) {
					return
				}
			}
			if err == io.EOF {
				return
			}
		}
	}
}
