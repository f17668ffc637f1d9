package memhold

import (
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/stretchr/testify/assert"
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
		require.LessOrEqual(t, l, bound-Slack, "the limit leaves the slack and what lies outside the heap")
		require.Greater(t, l, bound-(1<<30), "a test process has less than 1 GiB outside its heap")
	}

	h := Start(ProcessTarget(wide))
	within(wide * ProcessShare)
	restore := h.Narrow(Target{Bound: func() int64 { return narrow }, Blind: func(b int64) int64 { return b / 2 }})
	within(narrow)
	restore()
	within(wide * ProcessShare)
	h.Stop()
	require.Equal(t, old, limit(), "stopped, the limit is as it was")

	// Where the memory outside the heap is unknown, an eighth and
	// Outside are left for it.
	require.Equal(t, int64(512-64-32)<<20, ProcessTarget(wide).Blind(512<<20))
	require.Equal(t, int64(Other), ProcessTarget(wide).Blind(64<<20))
}

// TestHeldLimit: the memory outside the Go heap, measured, comes off its
// limit, in whole MiB, never below Other.
func TestHeldLimit(t *testing.T) {
	assert.Equal(t, int64(512-100-16)<<20, HeldLimit(512<<20, 100<<20))
	assert.Equal(t, int64(512-100-16-1)<<20, HeldLimit(512<<20, 100<<20+1))
	assert.Equal(t, int64(Other), HeldLimit(512<<20, 600<<20), "never below Other")
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	outside := outsideGo(samples)
	assert.Positive(t, outside, "the program's own pages at least")
	assert.Less(t, outside, int64(1<<30))
}
