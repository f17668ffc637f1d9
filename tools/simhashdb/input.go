package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/simhashdb/simhashdb/internal/quote"

	"github.com/simhashdb/simhashdb/engine"
)

// inputError is a bad input line, named as FILE:LINE.
type inputError struct {
	file string
	line int
	err  error
}

func (e *inputError) Error() string { return fmt.Sprintf("%s:%d: %v", e.file, e.line, e.err) }

// openInput opens --input: a path, or - and "" for standard input. name is
// what errors call it.
func openInput(path string, stdin io.Reader) (r io.Reader, name string, size int64, closeFn func(), err error) {
	if path == "" || path == "-" {
		return stdin, "<stdin>", -1, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, path, 0, nil, unwrapPathError(err)
	}
	size = -1
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return f, path, size, func() { f.Close() }, nil
}

// openOutput opens --output: a path, or - and "" for standard output.
func openOutput(path string, stdout io.Writer) (w *bufio.Writer, closeFn func() error, err error) {
	if path == "" || path == "-" {
		w := bufio.NewWriterSize(stdout, 1<<16)
		return w, w.Flush, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	w = bufio.NewWriterSize(f, 1<<16)
	return w, func() error {
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}, nil
}

// countingReader counts the bytes read, for progress.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// maxLine is the longest input line read: a record with the longest
// name, and room for its id and fingerprint.
const maxLine = engine.MaxName + 256

// errLineTooLong is what scanLines gives fn for a line longer than maxLine.
type errLineTooLong struct{ n int64 }

func (e errLineTooLong) Error() string {
	return fmt.Sprintf("line of %d bytes, longer than any record (at most %d): skipped", e.n, maxLine)
}

// scanLines calls fn with each line of r (without its newline) and its
// number from 1, stopping at fn's first error. A line longer than maxLine
// is read past, not kept: fn gets its number and an errLineTooLong, and
// may report it and go on. The line's memory is reused after fn returns
// (no allocation a line: inputs run to hundreds of millions of lines), so
// fn must copy what it keeps (strings.Clone).
func scanLines(r io.Reader, name string, fn func(n int, line string, tooLong error) error) error {
	br := bufio.NewReaderSize(r, maxLine+2)
	for n := 1; ; n++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			size := int64(len(b))
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				size += int64(len(b))
			}
			if err != nil && err != io.EOF {
				return fmt.Errorf("%s: %w", name, err)
			}
			if bytes.HasSuffix(b, []byte{'\n'}) {
				size--
			}
			if ferr := fn(n, "", errLineTooLong{size}); ferr != nil {
				return ferr
			}
			if err == io.EOF {
				return nil
			}
			continue
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\r'})
		line := ""
		if len(b) > 0 {
			line = unsafe.String(&b[0], len(b))
		}
		if ferr := fn(n, line, nil); ferr != nil {
			return ferr
		}
		if err == io.EOF {
			return nil
		}
	}
}

// quoteShort quotes s for an error message, cut to its first 60 bytes.
func quoteShort(s string) string { return quote.Short(s, 60) }
