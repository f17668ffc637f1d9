package main

import (
	"flag"
	"runtime/debug"
	"testing"

	"github.com/simhashdb/simhashdb/server"
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

// TestFitInflight: the default bytes in flight are at most an eighth of
// the memory the process may use, never below --max-batch-body; a value
// given, or an unknown memory, keeps them.
func TestFitInflight(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name  string
		args  []string
		limit int64
		want  byteSize
	}{
		{"a large machine", nil, 24 << 30, server.DefaultMaxInflight},
		{"unknown", nil, 0, server.DefaultMaxInflight},
		{"a 1 GiB container", nil, 1 << 30, 128 * mib},
		{"a 256 MiB container: the batch body's floor", nil, 256 * mib, server.DefaultMaxBatchBody},
		{"a smaller batch body", []string{"--max-batch-body", "16MiB"}, 256 * mib, 32 * mib},
		{"given", []string{"--max-inflight-bytes", "200MiB"}, 256 * mib, 200 * mib},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s listenFlags
			fl := flag.NewFlagSet("serve", flag.ContinueOnError)
			s.register(fl, "127.0.0.1:0")
			require.NoError(t, fl.Parse(c.args))
			s.fitInflight(fl, c.limit)
			require.Equal(t, c.want, s.maxInflight)
			_, err := s.check()
			require.NoError(t, err)
		})
	}
}
