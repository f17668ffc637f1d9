package lines

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// TooLongError is what Scan gives fn for a line longer than its limit.
type TooLongError struct {
	Len, Max int64
}

func (e TooLongError) Error() string {
	return fmt.Sprintf("line of %d bytes, longer than any record (at most %d): skipped", e.Len, e.Max)
}

// Scan calls fn with each line of r (without its newline or a carriage
// return before it) and its number from 1, stopping at fn's first error. A
// line longer than maxLine bytes is read past, not kept: fn gets its number
// and a TooLongError, and may report it and go on, so memory stays bounded
// on any input. The line's memory is reused after fn returns (no allocation
// a line: inputs run to hundreds of millions of lines), so fn must copy
// what it keeps (strings.Clone). name is what read errors call r.
func Scan(r io.Reader, name string, maxLine int, fn func(n int, line string, tooLong error) error) error {
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
			if ferr := fn(n, "", TooLongError{size, int64(maxLine)}); ferr != nil {
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
