package cache

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdmit: while the cache has room every block comes in; once it is
// full, a block comes in on its second miss, and the doorkeeper forgets
// after its window.
func TestAdmit(t *testing.T) {
	const budget, cost = 1 << 20, 8 << 10
	c := New(budget)
	slots := make([]Slot, 4<<10)
	require.True(t, c.Admit(&slots[0], cost), "a cache with room admits")
	require.True(t, c.Admit(&slots[0], cost), "with room, a miss is not remembered")

	// Fill the cache.
	fill := make([]uint64, 1<<10)
	for i := range fill {
		fill[i] = uint64(i) << 40
	}
	for i := 0; c.Room() >= cost; i++ {
		c.Put(&slots[len(slots)-1-i], fill, nil)
	}

	// A slot whose hash meets an earlier slot's comes in on its first miss:
	// rarely, in a doorkeeper of doorkeeperBits a block.
	admitted := 0
	for i := 1; i < 100; i++ {
		if c.Admit(&slots[i], cost) {
			admitted++
		}
	}
	require.Less(t, admitted, 5, "first misses admitted in a full cache")
	falseSeen := 0
	for i := 100; i < 200; i++ {
		if c.Admit(&slots[i], cost) {
			falseSeen++
		}
	}
	require.Less(t, falseSeen, 8, "the doorkeeper remembers slots it never saw")
	for i := 1; i < 100; i++ {
		require.True(t, c.Admit(&slots[i], cost), "slot %d's second miss", i)
	}

	// A window of misses later, it has forgotten them.
	others := make([]Slot, 2*c.door.window)
	for i := range others {
		c.Admit(&others[i], cost)
	}
	forgotten := 0
	for i := 1; i < 100; i++ {
		if !c.Admit(&slots[i], cost) {
			forgotten++
		}
	}
	require.Greater(t, forgotten, 80, "after a window of misses")
}

// TestAdmitWindow: the doorkeeper's window is the blocks the cache held
// when it filled, whatever their size.
func TestAdmitWindow(t *testing.T) {
	for _, fps := range []int{4, 64, 1 << 10} {
		c := New(4 << 20)
		block := make([]uint64, fps)
		for i := range block {
			block[i] = uint64(i) << 40
		}
		slots := make([]Slot, 1<<17)
		i := 0
		for ; c.Room() >= c.budget.Load()/roomShare; i++ {
			c.Put(&slots[i], block, nil)
		}
		held := c.entries()
		require.False(t, c.Admit(&slots[i], 1), "%d fingerprints a block: a first miss in a full cache", fps)
		require.Equal(t, uint64(min(max(held, 512), doorkeeperMost)), c.door.window, "%d fingerprints a block, %d held", fps, held)
	}
}
