package dataset

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// parquetBatch is how many rows are decoded at a time.
const parquetBatch = 64

// parquetItems reads the file's rows, a batch at a time, each made a
// record of the top-level columns the fields name.
func (f *File) parquetItems(o Options) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		// A damaged file can make the Parquet library panic deep in a
		// page's decoding: it is reported as the file's error, by name.
		stopped, inner := false, yield
		defer func() {
			if r := recover(); r != nil && !stopped {
				inner(Item{}, fmt.Errorf("%s: a Parquet file it cannot read: %v", f.name, r))
			}
		}()
		yield = func(it Item, err error) bool {
			if !inner(it, err) {
				stopped = true
				return false
			}
			return true
		}
		f.read.r = nil
		pf, err := parquet.OpenFile(countingReaderAt{f}, f.size)
		if err != nil {
			yield(Item{}, fmt.Errorf("%s: not a Parquet file it can read: %w", f.name, err))
			return
		}
		cols, err := parquetColumns(pf.Schema(), o.Fields)
		if err != nil {
			yield(Item{}, fmt.Errorf("%s: %w", f.name, err))
			return
		}
		var ordinal int64
		rows := make([]parquet.Row, parquetBatch)
		for g, rg := range pf.RowGroups() {
			rr := rg.Rows()
			var r int64
			for {
				n, err := rr.ReadRows(rows)
				for _, row := range rows[:n] {
					r++
					ordinal++
					rec, rerr := cols.record(row)
					it := Item{Place: fmt.Sprintf("%s: row group %d, row %d", f.name, g+1, r), Ordinal: ordinal, row: row.Clone(), rec: rec, recErr: rerr}
					if !yield(it, nil) {
						rr.Close()
						return
					}
				}
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					rr.Close()
					yield(Item{}, fmt.Errorf("%s: row group %d, after row %d: %w", f.name, g+1, r, err))
					return
				}
			}
			rr.Close()
		}
	}
}

// countingReaderAt counts what the Parquet reader reads, for progress.
type countingReaderAt struct{ f *File }

func (c countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.f.f.ReadAt(p, off)
	c.f.read.n.Add(int64(n))
	return n, err
}

// columns are the leaf columns of a record's fields, -1 for one absent.
type columns struct {
	f              Fields
	text, id, name int
}

func parquetColumns(s *parquet.Schema, f Fields) (columns, error) {
	c := columns{f: f, text: -1, id: -1, name: -1}
	look := func(name string, required bool) (int, error) {
		if name == "" || name == "-" {
			return -1, nil
		}
		leaf, ok := s.Lookup(name)
		switch {
		case !ok && required:
			return -1, fmt.Errorf("%w: no column %q (the schema: %s)", ErrField, name, s)
		case !ok:
			return -1, nil
		case leaf.MaxRepetitionLevel > 0:
			return -1, fmt.Errorf("%w: column %q is repeated: want one value a row", ErrField, name)
		}
		return leaf.ColumnIndex, nil
	}
	var err error
	if c.text, err = look(f.Text, true); err != nil {
		return c, err
	}
	if c.id, err = look(f.ID, false); err != nil {
		return c, err
	}
	if c.name, err = look(f.Name, f.Name != ""); err != nil {
		return c, err
	}
	return c, nil
}

// record makes a row a record.
func (c columns) record(row parquet.Row) (Record, error) {
	var rec Record
	var text, id, name *parquet.Value
	for i := range row {
		switch row[i].Column() {
		case c.text:
			text = &row[i]
		case c.id:
			id = &row[i]
		case c.name:
			name = &row[i]
		}
	}
	if text == nil || text.IsNull() || text.Kind() != parquet.ByteArray {
		return rec, fmt.Errorf("%w: column %q: %s, want a string", ErrField, c.f.Text, valueKind(text))
	}
	rec.Text = string(text.ByteArray())
	if id != nil && !id.IsNull() {
		switch id.Kind() {
		case parquet.Int32, parquet.Int64:
			if id.Int64() < 0 {
				return rec, fmt.Errorf("%w: column %q: %d, want an integer from 0", ErrField, c.f.ID, id.Int64())
			}
			rec.ID, rec.HasID = uint64(id.Int64()), true
		case parquet.ByteArray:
			s := string(id.ByteArray())
			if v, err := strconv.ParseUint(s, 10, 64); err == nil {
				rec.ID, rec.HasID = v, true
			} else if s == "" {
				return rec, fmt.Errorf("%w: column %q: an empty string", ErrField, c.f.ID)
			} else {
				rec.Key = s
			}
		default:
			return rec, fmt.Errorf("%w: column %q: %s, want an integer or a string", ErrField, c.f.ID, valueKind(id))
		}
	}
	if name != nil && !name.IsNull() {
		switch name.Kind() {
		case parquet.ByteArray:
			rec.Name = string(name.ByteArray())
		case parquet.Int32, parquet.Int64:
			rec.Name = strconv.FormatInt(name.Int64(), 10)
		default:
			return rec, fmt.Errorf("%w: column %q: %s, want a string or an integer", ErrField, c.f.Name, valueKind(name))
		}
	}
	return rec, nil
}

func valueKind(v *parquet.Value) string {
	if v == nil || v.IsNull() {
		return "null"
	}
	return "a value of type " + v.Kind().String()
}

// ParquetSchema is the schema of a Parquet file, for a writer of rows like
// its own (Item.Row).
func (f *File) ParquetSchema() (*parquet.Schema, error) {
	if f.format != Parquet {
		return nil, fmt.Errorf("%s: %s, not Parquet", f.name, f.format)
	}
	pf, err := parquet.OpenFile(f.f, f.size)
	if err != nil {
		return nil, fmt.Errorf("%s: not a Parquet file it can read: %w", f.name, err)
	}
	return pf.Schema(), nil
}
