package archive

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tree writes files (name: content) under dir.
func tree(t testing.TB, dir string, files map[string]string) {
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// read returns the files under dir.
func read(t testing.TB, dir string) map[string]string {
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	return out
}

func TestRoundTrip(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{"pebble/000001.sst": strings.Repeat("x", 70000), "pebble/MANIFEST-000001": "m", "wal/000002.wal": "", "wal/NEWEST": "2\n"}
	tree(t, src, files)
	require.NoError(t, os.MkdirAll(filepath.Join(src, "empty"), 0o755))
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, src))
	dst := filepath.Join(t.TempDir(), "new")
	require.NoError(t, Extract(bytes.NewReader(buf.Bytes()), dst))
	assert.Equal(t, files, read(t, dst))
	assert.DirExists(t, filepath.Join(dst, "empty"))
	err := Extract(bytes.NewReader(buf.Bytes()), dst)
	assert.ErrorContains(t, err, "new or empty folder")
}

// hostile is a tar of the entries given.
func hostile(t testing.TB, hs ...*tar.Header) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hs {
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write(make([]byte, h.Size))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func TestExtractRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		tar  []byte
		want string
	}{
		{"climbs out", hostile(t, &tar.Header{Typeflag: tar.TypeReg, Name: "../evil", Size: 1}), "not inside the folder"},
		{"absolute", hostile(t, &tar.Header{Typeflag: tar.TypeReg, Name: "/etc/evil", Size: 1}), "not inside the folder"},
		{"a link", hostile(t, &tar.Header{Typeflag: tar.TypeSymlink, Name: "wal", Linkname: "/etc"}), "not a folder or a regular file"},
		{"a device", hostile(t, &tar.Header{Typeflag: tar.TypeChar, Name: "dev"}), "not a folder or a regular file"},
		{"twice", hostile(t, &tar.Header{Typeflag: tar.TypeReg, Name: "a", Size: 1}, &tar.Header{Typeflag: tar.TypeReg, Name: "a", Size: 1}), "exists"},
		{"cut short", hostile(t, &tar.Header{Typeflag: tar.TypeReg, Name: "a", Size: 5000})[:1000], "entry 0"},
		{"not a tar", []byte(strings.Repeat("garbage!", 100)), "entry 0"},
		{"sparse", sparseTar(t, 1<<62), "sparse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			err := Extract(bytes.NewReader(tc.tar), filepath.Join(parent, "dst"))
			require.ErrorContains(t, err, tc.want)
			names, _ := os.ReadDir(parent)
			assert.Len(t, names, 1, "nothing written beside the folder")
		})
	}
}

// FuzzExtract: any stream is read or refused, never a panic; every name
// given is inside the folder, and each file's bytes are its size.
func FuzzExtract(f *testing.F) {
	src := f.TempDir()
	tree(f, src, map[string]string{"pebble/a": "abc", "wal/NEWEST": "1\n"})
	var buf bytes.Buffer
	require.NoError(f, Write(&buf, src))
	f.Add(buf.Bytes())
	f.Add(hostile(f, &tar.Header{Typeflag: tar.TypeReg, Name: "../x", Size: 1}))
	f.Add(sparseTar(f, 1<<40))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = entries(bytes.NewReader(b), func(name string, isDir bool, size int64, body io.Reader) error {
			require.True(t, filepath.IsLocal(name), name)
			if isDir {
				return nil
			}
			n, err := io.Copy(io.Discard, io.LimitReader(body, size))
			if err == nil && n != size {
				t.Fatalf("%s: %d bytes of %d", name, n, size)
			}
			return err
		})
	})
}
