package main

import (
	"testing"

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
