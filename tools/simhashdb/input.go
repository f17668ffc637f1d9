package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

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

// scanLines calls fn with each line of r (without its newline) and its
// number from 1, stopping at fn's first error. A line longer than the
// longest record is an error naming it. The line's memory is reused after
// fn returns (no allocation a line: inputs run to hundreds of millions of
// lines), so fn must copy what it keeps (strings.Clone).
func scanLines(r io.Reader, name string, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(r)
	const maxLine = engine.MaxName + 256
	sc.Buffer(make([]byte, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSuffix(sc.Bytes(), []byte{'\r'})
		line := ""
		if len(b) > 0 {
			line = unsafe.String(&b[0], len(b))
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &inputError{name, n + 1, fmt.Errorf("line longer than %d bytes", maxLine)}
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
