package directio

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestAligned(t *testing.T) {
	for _, n := range []int{1, Align - 1, Align, 3*Align + 5} {
		b := Aligned(n)
		require.Len(t, b, n)
		require.Equal(t, n, cap(b), "appending must not reach past the buffer")
		require.Zero(t, uintptr(unsafe.Pointer(&b[0]))%Align, "n = %d", n)
	}
}

func TestDropTree(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	for _, p := range []string{"x", "a/y", "a/b/z"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644))
	}
	require.NoError(t, DropTree(dir))
	b, err := os.ReadFile(filepath.Join(dir, "a/b/z"))
	require.NoError(t, err)
	require.Equal(t, "a/b/z", string(b), "dropping pages keeps the bytes")
	require.Error(t, DropTree(filepath.Join(dir, "absent")))
}
