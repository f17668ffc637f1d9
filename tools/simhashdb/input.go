package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/simhashdb/simhashdb/internal/lines"
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
// what errors call it. Reading ends with ctx's error once ctx is done,
// even while blocked (an idle pipe, a terminal) or fed without end
// (/dev/zero): Ctrl-C stops a command that waits for input.
func openInput(ctx context.Context, path string, stdin io.Reader) (r io.Reader, name string, size int64, closeFn func(), err error) {
	if path == "" || path == "-" {
		return cancelable(ctx, stdin), "<stdin>", -1, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, path, 0, nil, unwrapPathError(err)
	}
	size = -1
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		return f, path, fi.Size(), func() { f.Close() }, nil
	}
	return cancelable(ctx, f), path, size, func() { f.Close() }, nil
}

// cancelable returns a reader of r that fails with ctx's error as soon as
// ctx is done. A read blocked in r stays blocked in its own goroutine:
// the command exits.
func cancelable(ctx context.Context, r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	stop := context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
	go func() {
		_, err := io.Copy(pw, r)
		stop()
		pw.CloseWithError(err)
	}()
	return pr
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

// scanLines is lines.Scan of lines up to maxLine bytes.
func scanLines(r io.Reader, name string, fn func(n int, line string, tooLong error) error) error {
	return lines.Scan(r, name, maxLine, fn)
}

// quoteShort quotes s for an error message, cut to its first 60 bytes.
func quoteShort(s string) string { return quote.Short(s, 60) }
