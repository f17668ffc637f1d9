package quote

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestShort(t *testing.T) {
	assert.Equal(t, `"abc"`, Short("abc", 10))
	assert.Equal(t, `"abcde"... (26 bytes)`, Short("abcdefghijklmnopqrstuvwxyz", 5))
	assert.Equal(t, `"é"... (6 bytes)`, Short("ééé", 3), "cut at a rune boundary")
	assert.Less(t, len(Short(strings.Repeat("9", 100000), 40)), 70)
}
