package directio

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDropLeavesNothingCached: a file just written is cached, and after
// Drop none of its pages is (where the kernel can say: cachestat, Linux
// 6.5).
func TestDropLeavesNothingCached(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, make([]byte, 64<<10), 0o644))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	held, err := Cached(f.Fd(), 0, 64<<10)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("the kernel cannot say what the page cache holds: %v", err)
	}
	require.NoError(t, err)
	require.True(t, held, "a file just written is in the page cache")
	require.NoError(t, Drop(p))
	for _, r := range [][2]int64{{0, 64 << 10}, {100, 1}, {4095, 2}, {60 << 10, 4 << 10}} {
		held, err = Cached(f.Fd(), r[0], int(r[1]))
		require.NoError(t, err)
		require.False(t, held, "[%d, +%d)", r[0], r[1])
	}
	_, err = f.ReadAt(make([]byte, 10), 4095)
	require.NoError(t, err)
	for _, r := range [][2]int64{{4095, 2}, {0, 8192}, {5000, 100}} {
		held, err = Cached(f.Fd(), r[0], int(r[1]))
		require.NoError(t, err)
		require.True(t, held, "the pages a read brought: [%d, +%d)", r[0], r[1])
	}
}
