package main

import (
	"math"
	"testing"

	"github.com/simhashdb/simhashdb/engine"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestByteSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"65536", 65536, false},
		{"64KiB", 64 << 10, false},
		{"64 MiB", 64 << 20, false},
		{"1GiB", 1 << 30, false},
		{"1GB", 1_000_000_000, false},
		{"0", 0, false},
		{"", 0, true},
		{"-1", 0, true},
		{"64 parsecs", 0, true},
		{"99999999999999999999", 0, true},
	} {
		var b byteSize
		err := b.Set(c.in)
		if c.err {
			assert.Error(t, err, "%q", c.in)
			continue
		}
		require.NoError(t, err, "%q", c.in)
		assert.Equal(t, c.want, int64(b), "%q", c.in)
	}
	b := byteSize(256 << 20)
	assert.Equal(t, "256 MiB", b.String())
}

// TestMemoryBound: the bound adds its parts, and stops at the largest
// int64 rather than wrap into a small limit.
func TestMemoryBound(t *testing.T) {
	b := engine.MemoryBudget{Cache: 256 << 20, PebbleCache: 32 << 20, Memtables: 128 << 20, Directories: 96 << 20}
	assert.Equal(t, int64(672<<20), memoryBound(64<<20, b), "the bodies in flight count twice, decoded")
	assert.Equal(t, int64(672-32-32)<<20, goMemoryLimit(memoryBound(64<<20, b), b))
	assert.Equal(t, int64(math.MaxInt64), memoryBound(math.MaxInt64/2+1, b))

	// What serve leaves the index: 15/16 of the process's memory less
	// the bodies in flight, decoded, and memhold.Other; a quarter at least.
	assert.Equal(t, int64(1920-256-64)<<20, indexMemory(2<<30, 128<<20))
	assert.Equal(t, int64(480-128-64)<<20, indexMemory(512<<20, 64<<20))
	assert.Equal(t, int64(64<<20), indexMemory(256<<20, 256<<20))
	assert.Equal(t, int64(0), indexMemory(0, 64<<20), "unknown: the index sizes itself")
	huge := engine.MemoryBudget{Cache: math.MaxInt64 - 1, Memtables: 128 << 20}
	assert.Equal(t, int64(math.MaxInt64), memoryBound(64<<20, huge))

}
