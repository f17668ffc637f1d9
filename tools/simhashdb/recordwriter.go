package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/simhashdb/simhashdb/internal/dataset"
)

// recordWriter writes records as they were read (dataset.Item): JSON
// lines, compressed as the file's name ends (.gz, .zst), or Parquet rows
// of the input's schema. The file is written beside its name and renamed
// to it when whole, so that an interrupted run leaves no half file.
type recordWriter struct {
	path, tmp string
	f         *os.File
	buf       *bufio.Writer
	z         io.WriteCloser // the compressor, if any
	w         io.Writer      // where lines go
	pq        *parquet.GenericWriter[any]
	done      bool
}

// newRecordWriter creates path for records like those of first: Parquet
// for a Parquet input, JSON lines otherwise.
func newRecordWriter(path, first string) (*recordWriter, error) {
	in, err := dataset.Open(first)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	defer in.Close()
	w := &recordWriter{path: path}
	dir, name := filepath.Split(path)
	if w.f, err = os.CreateTemp(dir, "."+name+".*.tmp"); err != nil {
		return nil, err
	}
	w.tmp = w.f.Name()
	w.buf = bufio.NewWriterSize(w.f, 1<<20)
	if in.Format() == dataset.Parquet {
		schema, err := in.ParquetSchema()
		if err != nil {
			w.abort()
			return nil, err
		}
		w.pq = parquet.NewGenericWriter[any](w.buf, schema)
		return w, nil
	}
	switch {
	case strings.HasSuffix(path, ".gz"):
		w.z = gzip.NewWriter(w.buf)
	case strings.HasSuffix(path, ".zst"):
		if w.z, err = zstd.NewWriter(w.buf); err != nil {
			w.abort()
			return nil, err
		}
	}
	w.w = w.buf
	if w.z != nil {
		w.w = w.z
	}
	return w, nil
}

// write writes a record.
func (w *recordWriter) write(it dataset.Item) error {
	if w.pq != nil {
		if it.Row() == nil {
			return fmt.Errorf("%s: a JSON line, and the output is Parquet (the first dataset's format): give datasets of one kind", it.Place)
		}
		_, err := w.pq.WriteRows([]parquet.Row{it.Row()})
		return err
	}
	if it.Row() != nil {
		return fmt.Errorf("%s: a Parquet row, and the output is JSON lines (the first dataset's format): give datasets of one kind", it.Place)
	}
	if _, err := w.w.Write(it.Line); err != nil {
		return err
	}
	_, err := w.w.Write([]byte{'\n'})
	return err
}

// close finishes the file and gives it its name.
func (w *recordWriter) close() error {
	var errs []error
	if w.pq != nil {
		errs = append(errs, w.pq.Close())
	}
	if w.z != nil {
		errs = append(errs, w.z.Close())
	}
	errs = append(errs, w.buf.Flush(), w.f.Sync(), w.f.Close())
	if err := errors.Join(errs...); err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	w.done = true
	return os.Rename(w.tmp, w.path)
}

// abort removes what was written, unless close finished it.
func (w *recordWriter) abort() {
	if !w.done {
		w.f.Close()
		os.Remove(w.tmp)
	}
}
