package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMemoryHold: a hold sets the Go heap's soft limit below its bound by
// the memory outside the heap, a narrower target moves it down until put
// back, and stopping puts back the limit it found.
func TestMemoryHold(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	const wide, narrow = 4 << 30, 512 << 20
	limit := func() int64 { return debug.SetMemoryLimit(-1) }
	within := func(bound int64) {
		t.Helper()
		l := limit()
		require.LessOrEqual(t, l, bound-memorySlack, "the limit leaves the slack and what lies outside the heap")
		require.Greater(t, l, bound-(1<<30), "a test process has less than 1 GiB outside its heap")
	}

	h := startHold(processTarget(wide))
	within(wide * processShare)
	restore := h.narrow(memoryTarget{bound: func() int64 { return narrow }, blind: func(b int64) int64 { return b / 2 }})
	within(narrow)
	restore()
	within(wide * processShare)
	h.stop()
	require.Equal(t, old, limit(), "stopped, the limit is as it was")

	// Where the memory outside the heap is unknown, an eighth and
	// memoryOutside are left for it.
	require.Equal(t, int64(512-64-32)<<20, processTarget(wide).blind(512<<20))
	require.Equal(t, int64(memoryOther), processTarget(wide).blind(64<<20))
}
