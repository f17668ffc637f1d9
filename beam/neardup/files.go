package neardup

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
)

// WriteFile creates the file name on its Beam file system (local, gs://,
// s3://) and calls write with a buffered writer of it. Errors name the
// file; the file is closed in every case.
func WriteFile(ctx context.Context, name string, write func(io.Writer) error) (err error) {
	fs, err := filesystem.New(ctx, name)
	if err != nil {
		return err
	}
	defer fs.Close()
	fd, err := fs.OpenWrite(ctx, name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer func() {
		if cerr := fd.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%s: %w", name, cerr)
		}
	}()
	w := bufio.NewWriterSize(fd, 1<<20)
	if err := write(w); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
