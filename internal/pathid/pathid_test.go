package pathid

import (
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
)

func TestHash(t *testing.T) {
	for _, name := range []string{"", "a.txt", "docs/README.md", "https://a.example/"} {
		h := Hash(name)
		assert.NotZero(t, h, name)
		assert.Less(t, h, uint64(1)<<53, name)
		assert.Equal(t, h, Hash(name), "the same name, the same id")
		if x := xxhash.Sum64String(name) & (1<<53 - 1); x != 0 {
			assert.Equal(t, x, h, name)
		}
	}
	assert.NotEqual(t, Hash("a.txt"), Hash("b.txt"))
}
