package engine

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCrashChild is the writer that TestCrash kills; it does nothing unless
// started by TestCrash.
func TestCrashChild(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("SIMHASHDB_CRASH_DIR")
	if dir == "" {
		t.Skip("run by TestCrash")
	}
	seed, _ := strconv.ParseUint(os.Getenv("SIMHASHDB_CRASH_SEED"), 10, 64)
	db, err := Open(dir, Options{SizeHint: 1 << 12, MemtableSize: 32 << 10, Sync: SyncAlways})
	if err != nil {
		fmt.Println("open error", err)
		os.Exit(3)
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Printf(format+"\n", args...)
		out.Unlock()
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			crashWriter(db, seed, w, say, func() bool { return false })
		}()
	}
	wg.Wait()
}

// crashWriter is writer w of the crash tests: it inserts, replaces and
// deletes documents whose ids are w mod 4, writer 1 also a large commit
// now and then, writer 0 flushes now and then, writer 2 runs FindAll now
// and then (each freezes the memtable, so flushes take several, and a
// crash can fall between them); it says "begin" before each write and
// "ack" once it is acknowledged, until stop or a write fails.
func crashWriter(db *DB, seed uint64, w int, say func(format string, args ...any), stop func() bool) {
	r := rand.New(rand.NewPCG(seed, uint64(w)))
	for i := 0; !stop(); i++ {
		id := uint64(w) + 4*uint64(r.IntN(2000)) // writer w owns ids = w mod 4
		if i%20 == 3 && w == 1 {
			// A commit of several log records that replaces the
			// same documents each time: all or nothing.
			v := seed<<20 | uint64(i)
			say("begin batch %d", v)
			if err := db.InsertBatch(ctx, crashBatchDocs(v)); err != nil {
				say("error %v", err)
				return
			}
			say("ack batch %d", v)
			continue
		}
		if i%10 == 5 && w == 2 {
			for _, err := range db.FindAll(ctx, 0) {
				if err != nil {
					say("error %v", err)
					return
				}
			}
		}
		if r.IntN(5) == 0 {
			say("begin del %d", id)
			if err := db.Delete(ctx, id); err != nil {
				say("error %v", err)
				return
			}
			say("ack del %d", id)
			continue
		}
		fp := r.Uint64() >> uint(r.IntN(3)*20)
		say("begin put %d %d", id, fp)
		if err := db.Insert(ctx, Doc{ID: id, Fingerprint: fp, Name: strconv.FormatUint(id, 10)}); err != nil {
			say("error %v", err)
			return
		}
		say("ack put %d %d", id, fp)
		if i%50 == 0 && w == 0 {
			if err := db.Flush(ctx); err != nil {
				say("error %v", err)
				return
			}
		}
	}
}

// idState is what the crash test knows of an id: its acknowledged state,
// and the state an unacknowledged write in flight at the kill may have left.
type idState struct {
	acked, pending *Doc // nil Doc pointer fields mean "absent"
	hasAck, inFly  bool
	ackAbsent      bool
	pendAbsent     bool
}

// crashBatch is the number of documents of the crash test's large
// commits: with their long names, two log records.
const crashBatch = 1200

// crashBatchDocs is version v of the crash test's large commit: the same
// ids every time, other fingerprints and names.
func crashBatchDocs(v uint64) []Doc {
	r := rand.New(rand.NewPCG(v, 7))
	pad := strings.Repeat("n", MaxName-40)
	docs := make([]Doc, crashBatch)
	for i := range docs {
		docs[i] = Doc{ID: 1<<40 + uint64(i), Fingerprint: r.Uint64(), Name: fmt.Sprintf("%s-%d-%d", pad, v, i)}
	}
	return docs
}

// crashModel is what the crash tests know of the index from what the
// writers said: each id's acknowledged state and the write in flight, the
// large commit's versions acknowledged and in flight.
type crashModel struct {
	states                  map[uint64]*idState
	batchAcked, batchInFly  uint64 // 0: none
	acks, lost, batchesSeen int
}

func newCrashModel() *crashModel { return &crashModel{states: map[uint64]*idState{}} }

// said takes one line a writer said.
func (m *crashModel) said(t *testing.T, line string) {
	f := strings.Fields(line)
	require.GreaterOrEqual(t, len(f), 3, "writer said %q", line)
	require.NotEqual(t, "error", f[0], "writer said %q", line)
	if f[1] == "batch" {
		v, _ := strconv.ParseUint(f[2], 10, 64)
		if f[0] == "begin" {
			m.batchInFly = v
		} else {
			m.batchAcked, m.batchInFly = v, 0
		}
		return
	}
	id, _ := strconv.ParseUint(f[2], 10, 64)
	s := m.states[id]
	if s == nil {
		s = &idState{}
		m.states[id] = s
	}
	var d *Doc
	if f[1] == "put" {
		fp, _ := strconv.ParseUint(f[3], 10, 64)
		d = &Doc{ID: id, Fingerprint: fp, Name: f[2]}
	}
	if f[0] == "begin" {
		s.inFly, s.pending, s.pendAbsent = true, d, d == nil
	} else {
		s.hasAck, s.acked, s.ackAbsent = true, d, d == nil
		s.inFly = false
		m.acks++
	}
}

// verify checks db, opened after a crash, against the model: every
// acknowledged write is there (and every acknowledged delete holds), a
// write in flight is there or not, the large commit is of one version,
// queries agree and Check passes. Then the writes in flight are settled
// to what recovery chose.
func (m *crashModel) verify(t *testing.T, db *DB, round int) {
	_, err := db.Check(ctx)
	require.NoError(t, err, "round %d", round)
	for id, s := range m.states {
		got, err := db.Get(ctx, id)
		present := err == nil
		ok := func(d *Doc, absent bool) bool {
			if absent {
				return !present
			}
			return present && got == *d
		}
		good := !s.hasAck && !present || s.hasAck && ok(s.acked, s.ackAbsent) || s.inFly && ok(s.pending, s.pendAbsent)
		if !good && s.hasAck {
			m.lost++
		}
		require.True(t, good, "round %d: id %d: got %+v (present %v), state %+v", round, id, got, present, s)
		s.inFly = false
		s.hasAck, s.ackAbsent = true, !present
		if present {
			g := got
			s.acked = &g
			ms, err := db.Query(ctx, g.Fingerprint, 0)
			require.NoError(t, err)
			assert.Contains(t, ms, Match{g, 0})
		}
	}
	// Every sampled document of the large commit is of one version: the
	// last acknowledged, or the one in flight.
	seen := map[uint64]int{}
	for _, i := range []int{0, 1, crashBatch / 2, crashBatch - 2, crashBatch - 1} {
		got, err := db.Get(ctx, 1<<40+uint64(i))
		if err != nil {
			require.ErrorIs(t, err, ErrNotFound)
			seen[0]++
			continue
		}
		v := uint64(0)
		for _, c := range []uint64{m.batchAcked, m.batchInFly} {
			if c != 0 && crashBatchDocs(c)[i] == got {
				v = c
			}
		}
		if v == 0 {
			var fromName uint64 // the version the document says it is of, from its name
			if parts := strings.Split(got.Name, "-"); len(parts) == 3 {
				fromName, _ = strconv.ParseUint(parts[1], 10, 64)
			}
			fpOf := uint64(0) // the fingerprint that version gives the document
			if fromName != 0 {
				fpOf = crashBatchDocs(fromName)[i].Fingerprint
			}
			require.Failf(t, "a large commit of another version", "round %d: document %d of the large commit is named as of version %d (%#x), fingerprint %#x (that version's: %#x), neither the acknowledged %d (%#x) nor the one in flight %d (%#x)",
				round, i, fromName, fromName, got.Fingerprint, fpOf, m.batchAcked, m.batchAcked, m.batchInFly, m.batchInFly)
		}
		seen[v]++
	}
	require.Len(t, seen, 1, "round %d: the large commit's documents are of several versions: %v", round, seen)
	for v := range seen {
		if v == 0 && m.batchAcked != 0 {
			m.lost++
		}
		require.False(t, v == 0 && m.batchAcked != 0, "round %d: acknowledged commit %d lost", round, m.batchAcked)
		if v != m.batchAcked {
			m.batchesSeen++ // the one in flight made it
		}
		m.batchAcked, m.batchInFly = v, 0
	}
}

// TestCrash kills a writing child process with SIGKILL at random moments,
// many times over one index, and checks after each kill that every
// acknowledged write is there (and every acknowledged delete holds), that
// a large commit is there whole or not at all, that queries agree, and
// that Check passes. SIMHASHDB_CRASH_ROUNDS sets the number of kills (CI
// runs 1000).
func TestCrash(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills child processes")
	}
	dir := t.TempDir()
	rounds := 12
	if n, err := strconv.Atoi(os.Getenv("SIMHASHDB_CRASH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	r := rand.New(rand.NewPCG(11, 11))
	m := newCrashModel()
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), "SIMHASHDB_CRASH_DIR="+dir, fmt.Sprintf("SIMHASHDB_CRASH_SEED=%d", round+1))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := make(chan string, 1024)
		go func() {
			s := bufio.NewScanner(stdout)
			for s.Scan() {
				lines <- s.Text()
			}
			close(lines)
		}()
		// Half the kills are timed from the start (some land in the open's
		// replay), half from the child's first write.
		wait := time.Duration(20+r.IntN(300)) * time.Millisecond
		var kill <-chan time.Time
		if round%2 == 1 {
			kill = time.After(wait)
		}
		acks := 0
	read:
		for {
			if kill == nil && round%2 == 0 && acks > 0 && wait > 0 {
				kill, wait = time.After(wait), 0
			}
			select {
			case <-kill:
				require.NoError(t, cmd.Process.Kill())
				kill = nil
			case line, ok := <-lines:
				if !ok {
					break read
				}
				m.said(t, line)
				if strings.HasPrefix(line, "ack") {
					acks++
				}
			}
		}
		_ = cmd.Wait()
		db, err := Open(dir, Options{})
		require.NoError(t, err, "round %d", round)
		m.verify(t, db, round)
		require.NoError(t, db.Close())
		if rounds <= 50 || round%100 == 0 {
			t.Logf("round %d: %d acknowledged writes, %d ids", round, acks, len(m.states))
		}
	}
	t.Logf("%d kills: %d ids checked and a large commit after each, %d commits in flight at a kill found whole, %d acknowledged writes lost", rounds, len(m.states), m.batchesSeen, m.lost)
}
