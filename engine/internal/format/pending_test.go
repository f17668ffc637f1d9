package format

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParsePending(t *testing.T) {
	v2 := AppendPendingRun(nil, []uint64{5, 9, 1 << 40})
	twoRuns := append(AppendPendingRun(nil, []uint64{7, 100}), AppendPendingRun([]byte{0}, []uint64{3, 50, 1<<64 - 1})...)
	tests := []struct {
		name string
		v    []byte
		n    int
		want []uint64
		err  string
	}{
		{"one run (a version 2 list)", v2, 3, []uint64{5, 9, 1 << 40}, ""},
		{"two runs, sorted on read", twoRuns, 5, []uint64{3, 7, 50, 100, 1<<64 - 1}, ""},
		{"fewer than counted", v2, 4, nil, "the directory says 4"},
		{"more than counted", twoRuns, 4, nil, "more than 4"},
		{"too short", []byte{1, 2}, 1, nil, "pending list of 2 bytes"},
		{"run cut short", append(slices.Clone(v2), 0, 1, 2), 4, nil, "run 2 cut short"},
		{"same fingerprint in two runs", append(AppendPendingRun(nil, []uint64{7}), AppendPendingRun([]byte{0}, []uint64{7})...), 2, nil, "twice"},
		{"gap past 2^64", append(AppendPendingRun(nil, []uint64{1<<64 - 2}), 5), 2, nil, "bad entry 1"},
		{"bad uvarint", append(AppendPendingRun(nil, []uint64{1}), 0x80), 2, nil, "bad entry 1"},
	}
	for _, tt := range tests {
		got, err := ParsePending(tt.v, tt.n)
		if tt.err != "" {
			require.ErrorIs(t, err, ErrCorrupt, tt.name)
			require.Contains(t, err.Error(), tt.err, tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, got, tt.name)
	}
}

// FuzzParsePending: any bytes give a sorted list of distinct fingerprints
// of the length asked for, or an error; never a panic.
func FuzzParsePending(f *testing.F) {
	f.Add(AppendPendingRun(nil, []uint64{5, 9, 1 << 40}), 3)
	f.Add(append(AppendPendingRun(nil, []uint64{7, 100}), AppendPendingRun([]byte{0}, []uint64{3, 50})...), 4)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0}, 2)
	f.Fuzz(func(t *testing.T, v []byte, n int) {
		if n > 1<<16 {
			return
		}
		got, err := ParsePending(v, n)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		require.Len(t, got, n)
		for i := 1; i < len(got); i++ {
			require.Less(t, got[i-1], got[i])
		}
	})
}
