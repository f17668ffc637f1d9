package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// TestPowerCut cuts the power under writers many times over one index: the
// index lives on Pebble's crashable in-memory file system, and each cut
// keeps what was synced and a random share of what was not (none, all, or
// anything between, block by block). The next round opens what the cut
// kept and checks it as TestCrash does: every write acknowledged before the
// cut is there, the large commit is whole or absent, Check passes.
// SIMHASHDB_POWERCUT_ROUNDS sets the number of cuts (CI runs 1000).
func TestPowerCut(t *testing.T) {
	t.Parallel()
	rounds := powerCutRounds()
	r := rand.New(rand.NewPCG(13, 13))
	fs := newCrashableFS()
	m := newCrashModel()
	cuts := map[string]int{}
	for round := range rounds {
		o := Options{SizeHint: 1 << 12, MemtableSize: 32 << 10, Sync: SyncAlways, FS: fs}
		db, err := Open("/index", o)
		require.NoError(t, err, "round %d", round)
		m.verify(t, db, round)
		// The writers say what they do; the cut holds back new lines while
		// it takes what it knows and the file system's state, so that a
		// write it does not know of has not begun.
		var gate sync.RWMutex
		var lines []string
		var stop atomic.Bool
		say := func(format string, args ...any) {
			gate.Lock()
			lines = append(lines, fmt.Sprintf(format, args...))
			gate.Unlock()
		}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				crashWriter(db, uint64(round+1), w, say, stop.Load)
			}()
		}
		time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond)
		cfg := vfs.CrashCloneCfg{}
		c := r.IntN(3)
		if f := os.Getenv("SIMHASHDB_POWERCUT_MODE"); f != "" {
			c, _ = strconv.Atoi(f)
		}
		switch c {
		case 0:
			cuts["synced only"]++
		case 1:
			cfg.UnsyncedDataPercent, cfg.RNG = 100, rand.New(rand.NewPCG(uint64(round), 1))
			cuts["everything"]++
		default:
			cfg.UnsyncedDataPercent, cfg.RNG = 1+r.IntN(99), rand.New(rand.NewPCG(uint64(round), 2))
			cuts["some unsynced"]++
		}
		gate.Lock()
		known := lines
		cut := fs.CrashClone(cfg)
		gate.Unlock()
		stop.Store(true)
		wg.Wait()
		db.Close() // of the file system before the cut: its errors do not matter
		for _, line := range known {
			m.said(t, line)
		}
		fs = cut
	}
	db, err := Open("/index", Options{FS: fs})
	require.NoError(t, err)
	m.verify(t, db, rounds)
	require.NoError(t, db.Close())
	t.Logf("%d power cuts (%v): %d ids checked and a large commit after each, %d acknowledged writes, %d commits in flight at a cut found whole, %d acknowledged writes lost",
		rounds, cuts, len(m.states), m.acks, m.batchesSeen, m.lost)
}

// powerCutRounds is the number of cuts a power-cut test makes:
// SIMHASHDB_POWERCUT_ROUNDS, or 25.
func powerCutRounds() int {
	if n, err := strconv.Atoi(os.Getenv("SIMHASHDB_POWERCUT_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 25
}
