// Package archive sends an index folder as a stream of bytes and takes it
// back: a tar of its folders and regular files, names relative to the
// folder, for a replica's snapshot (GET /v1/snapshot, serve
// --snapshot-from). Extract refuses anything a folder written by Write
// does not hold: links, devices, absolute names, names that climb out.
package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes the folders and regular files under dir to w as a tar.
func Write(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: filepath.ToSlash(rel) + "/", Mode: 0o755})
		case !info.Mode().IsRegular():
			return fmt.Errorf("archive: %s is not a regular file", path)
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Mode: 0o644, Size: info.Size()}); err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// Extract writes the tar r into dir, which must not exist or be empty,
// every file and folder synced. A damaged or hostile stream is an error
// naming the entry; what was written of it stays for the caller to
// remove.
func Extract(r io.Reader, dir string) error {
	if names, err := os.ReadDir(dir); err == nil && len(names) > 0 {
		return fmt.Errorf("archive: %s holds %d files: extract into a new or empty folder", dir, len(names))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dirs := []string{dir}
	err := entries(r, func(name string, isDir bool, size int64, body io.Reader) error {
		path := filepath.Join(dir, name)
		if isDir {
			dirs = append(dirs, path)
			return os.MkdirAll(path, 0o755)
		}
		return writeFile(path, body, size)
	})
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// entries reads the tar r and calls fn with each entry, its name made
// local to the folder (a folder, or a regular file of size bytes read
// from body), refusing any other.
func entries(r io.Reader, fn func(name string, isDir bool, size int64, body io.Reader) error) error {
	in := &counter{r: r}
	tr := tar.NewReader(in)
	for i := 0; ; i++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("archive: entry %d: %w", i, err)
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("archive: entry %d: name %q is not inside the folder", i, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = fn(name, true, 0, nil)
		case tar.TypeReg:
			if h.Size < 0 {
				return fmt.Errorf("archive: entry %d (%s): size %d", i, h.Name, h.Size)
			}
			err = fn(name, false, h.Size, &dense{r: tr, in: in, start: in.n})
		default:
			return fmt.Errorf("archive: entry %d (%s): type %q, not a folder or a regular file", i, h.Name, h.Typeflag)
		}
		if err != nil {
			return fmt.Errorf("archive: entry %d (%s): %w", i, h.Name, err)
		}
	}
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// errSparse: a file whose bytes are not in the stream. A sparse file
// reads as zeros up to its declared size, which costs its sender nothing:
// 2^62 of them would fill the disk. Write never makes one.
var errSparse = errors.New("a file larger than its bytes in the stream (sparse)")

// dense reads a file's bytes and refuses more of them than the stream
// held since the file began: the holes of a sparse file.
type dense struct {
	r         io.Reader
	in        *counter
	start, at int64
}

func (d *dense) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.at += int64(n)
	if d.at > d.in.n-d.start {
		return n, errSparse
	}
	return n, err
}

// writeFile writes size bytes of r to a new file at path, synced.
func writeFile(path string, r io.Reader, size int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
