package engine

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/internal/fingerprints"
)

// TestMetamorphic runs random sequences of writes (inserts, replacements,
// deletes, batches), flushes, reopens, power cuts (on Pebble's crashable
// in-memory file system, writes synced: a cut loses none of them) and
// reads (Query, QueryFingerprints, QueryBatch short
// and pinned, FindAll, Clusters, Stars' cover, Docs, Get, Stats), each
// checked against a map of the documents; some reads run with writes in
// the middle of them and must see the index as it was when they began.
// Reads freeze memtables, so the sequences reach every number of frozen
// layers. SIMHASHDB_METAMORPHIC_RUNS sets how many sequences (CI runs
// many); SIMHASHDB_METAMORPHIC_SEED replays one. A failure names its seed.
func TestMetamorphic(t *testing.T) {
	t.Parallel()
	runs := 3
	if s := os.Getenv("SIMHASHDB_METAMORPHIC_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "SIMHASHDB_METAMORPHIC_RUNS")
		runs = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SIMHASHDB_METAMORPHIC_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "SIMHASHDB_METAMORPHIC_SEED")
		seed, runs = n, 1
	}
	for i := range runs {
		s := seed + uint64(i)
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			t.Logf("replay with SIMHASHDB_METAMORPHIC_SEED=%d", s)
			newMetamorphic(t, s).run(300)
		})
	}
}

type metamorphic struct {
	t     *testing.T
	r     *rand.Rand
	fs    crashableFS
	db    *DB
	model oracle
	base  []uint64 // fingerprints that documents take, or a neighbour of one
	ops   []string // what ran, for the failure's message
}

func newMetamorphic(t *testing.T, seed uint64) *metamorphic {
	m := &metamorphic{t: t, r: rand.New(rand.NewPCG(seed, seed)), fs: newCrashableFS(), model: oracle{}}
	m.base = append(fingerprints.Uniform(40, seed), 0, ^uint64(0))
	m.db = openT(t, metamorphicDir, m.options())
	t.Cleanup(func() { m.db.Close() })
	return m
}

const metamorphicDir = "/index"

func (m *metamorphic) options() Options {
	o := testOptions()
	o.Sync, o.FS = SyncAlways, m.fs
	return o
}

func (m *metamorphic) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("%s\nafter: %v", fmt.Sprintf(format, args...), m.ops[max(len(m.ops)-20, 0):])
}

func (m *metamorphic) check(err error) {
	m.t.Helper()
	if err != nil {
		m.fail("%v", err)
	}
}

// doc returns a document on one of few ids, near one of few fingerprints:
// replacements, duplicates and pairs at every distance are common.
func (m *metamorphic) doc() Doc {
	fp := m.base[m.r.IntN(len(m.base))]
	if m.r.IntN(3) > 0 {
		fp = fingerprints.Flip(fp, m.r.IntN(5), m.r)
	}
	d := Doc{ID: 1 + m.r.Uint64N(400), Fingerprint: fp}
	if m.r.IntN(2) == 0 {
		d.Name = fmt.Sprintf("n%d", m.r.IntN(1000))
	}
	return d
}

func (m *metamorphic) run(steps int) {
	most := 0 // frozen memtables
	defer func() { m.t.Logf("up to %d frozen memtables", most) }()
	for range steps {
		m.db.mu.RLock()
		most = max(most, len(m.db.frozen))
		m.db.mu.RUnlock()
		switch op := m.r.IntN(100); {
		case op < 30:
			m.insert(1 + m.r.IntN(3))
		case op < 38:
			m.insert(1 + m.r.IntN(200))
		case op < 48:
			m.delete()
		case op < 52:
			m.ops = append(m.ops, "flush")
			m.check(m.db.Flush(ctx))
		case op < 53:
			m.reopen()
		case op < 54:
			m.powerCut()
		case op < 70:
			m.query()
		case op < 76:
			m.queryBatch(1 + m.r.IntN(20))
		case op < 78:
			m.queryBatch(pinQueries)
		case op < 84:
			m.pairs()
		case op < 90:
			m.docs()
		case op < 94:
			m.during()
		default:
			m.get()
		}
	}
	m.pairs()
	m.docs()
	_, err := m.db.Check(ctx)
	m.check(err)
}

func (m *metamorphic) insert(n int) {
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = m.doc()
	}
	m.ops = append(m.ops, fmt.Sprintf("insert %d", n))
	if n == 1 {
		m.check(m.db.Insert(ctx, docs[0]))
	} else {
		m.check(m.db.InsertBatch(ctx, docs))
	}
	for _, d := range docs {
		m.model[d.ID] = d
	}
}

func (m *metamorphic) delete() {
	ids := make([]uint64, 1+m.r.IntN(5))
	for i := range ids {
		ids[i] = 1 + m.r.Uint64N(400)
	}
	m.ops = append(m.ops, fmt.Sprintf("delete %v", ids))
	m.check(m.db.Delete(ctx, ids...))
	for _, id := range ids {
		delete(m.model, id)
	}
}

func (m *metamorphic) reopen() {
	m.ops = append(m.ops, "reopen")
	m.check(m.db.Close())
	m.db = openT(m.t, metamorphicDir, m.options())
}

// powerCut opens what a power cut now would leave: what was synced, and
// some of what was not.
func (m *metamorphic) powerCut() {
	pct := m.r.IntN(101)
	m.ops = append(m.ops, fmt.Sprintf("power cut (%d%% of unsynced data kept)", pct))
	cut := m.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rand.New(rand.NewPCG(m.r.Uint64(), 0))})
	m.db.Close() // on the file system before the cut
	m.fs = cut
	db, err := Open(metamorphicDir, m.options())
	m.check(err)
	m.db = db
}

func (m *metamorphic) query() {
	q, k := m.doc().Fingerprint, m.r.IntN(m.db.K()+1)
	m.ops = append(m.ops, fmt.Sprintf("query %016x k=%d", q, k))
	got, err := m.db.Query(ctx, q, k)
	m.check(err)
	want := m.model.query(q, k)
	if !slices.Equal(want, got) {
		m.fail("query %016x k=%d: got %v, want %v", q, k, got, want)
	}
	// Before the first flush, and while the memtables write only ids above
	// the flushed ones, the memtables answer it alone, over every layer.
	nears, err := m.db.QueryFingerprints(ctx, nil, q, k)
	m.check(err)
	if want := nearOf(want); !slices.Equal(want, nears) {
		m.fail("QueryFingerprints %016x k=%d: got %v, want %v", q, k, nears, want)
	}
}

func (m *metamorphic) queryBatch(n int) {
	qs := make([]uint64, n)
	for i := range qs {
		qs[i] = m.doc().Fingerprint
	}
	k := m.r.IntN(m.db.K() + 1)
	m.ops = append(m.ops, fmt.Sprintf("QueryBatch %d k=%d", n, k))
	for r, err := range m.db.QueryBatch(ctx, qs, k) {
		m.check(err)
		if want := m.model.query(r.Query, k); !slices.Equal(want, r.Matches) {
			m.fail("QueryBatch %016x k=%d: got %v, want %v", r.Query, k, r.Matches, want)
		}
	}
}

func (m *metamorphic) pairs() {
	k := m.r.IntN(m.db.K() + 1)
	m.ops = append(m.ops, fmt.Sprintf("FindAll k=%d", k))
	var got []Pair
	for p, err := range m.db.FindAll(ctx, k) {
		m.check(err)
		got = append(got, p)
	}
	slices.SortFunc(got, func(a, b Pair) int { return cmp.Or(cmp.Compare(a.A.ID, b.A.ID), cmp.Compare(a.B.ID, b.B.ID)) })
	want := m.model.pairs(k)
	if !slices.Equal(want, got) {
		m.fail("FindAll k=%d: %d pairs, want %d", k, len(got), len(want))
	}
	var clusters [][]Doc
	for c, err := range m.db.Clusters(ctx, k) {
		m.check(err)
		clusters = append(clusters, c)
	}
	require.Equal(m.t, oracleClusters(want), clusters, "Clusters k=%d after %v", k, m.ops[max(len(m.ops)-20, 0):])
	// A star is its centre and documents within k of it; no document is
	// in two, and each has a neighbour.
	paired := map[uint64]bool{}
	for _, p := range want {
		paired[p.A.ID], paired[p.B.ID] = true, true
	}
	inStar := map[uint64]bool{}
	for s, err := range m.db.Stars(ctx, k) {
		m.check(err)
		for _, d := range s {
			if inStar[d.ID] || !paired[d.ID] || bits.OnesCount64(d.Fingerprint^s[0].Fingerprint) > k || m.model[d.ID] != d {
				m.fail("Stars k=%d: star %v", k, s)
			}
			inStar[d.ID] = true
		}
	}
}

func (m *metamorphic) docs() {
	m.ops = append(m.ops, "Docs")
	var got []Doc
	for d, err := range m.db.Docs(ctx) {
		m.check(err)
		got = append(got, d)
	}
	m.sameDocs(m.model, got)
	st, err := m.db.Stats(ctx)
	m.check(err)
	if st.Documents != int64(len(m.model)) {
		m.fail("Stats: %d documents, want %d", st.Documents, len(m.model))
	}
}

func (m *metamorphic) sameDocs(model oracle, got []Doc) {
	m.t.Helper()
	want := slices.SortedFunc(func(yield func(Doc) bool) {
		for _, d := range model {
			if !yield(d) {
				return
			}
		}
	}, func(a, b Doc) int { return cmp.Compare(a.ID, b.ID) })
	if !slices.Equal(want, got) {
		m.fail("Docs: %d documents, want %d", len(got), len(want))
	}
}

// during writes, flushes and queries in the middle of an iteration of
// Docs, which sees the index as it was when it began.
func (m *metamorphic) during() {
	m.ops = append(m.ops, "Docs with writes")
	before := oracle{}
	for id, d := range m.model {
		before[id] = d
	}
	var got []Doc
	n := 0
	for d, err := range m.db.Docs(ctx) {
		m.check(err)
		got = append(got, d)
		if n++; n == 1 {
			m.insert(1 + m.r.IntN(50))
			m.delete()
			if m.r.IntN(2) == 0 {
				m.check(m.db.Flush(ctx))
			}
			m.query()
			m.pairs()
		}
	}
	m.sameDocs(before, got)
}

func (m *metamorphic) get() {
	id := 1 + m.r.Uint64N(400)
	m.ops = append(m.ops, fmt.Sprintf("get %d", id))
	got, err := m.db.Get(ctx, id)
	want, ok := m.model[id]
	switch {
	case ok && (err != nil || got != want):
		m.fail("get %d: %v %v, want %v", id, got, err, want)
	case !ok && !errors.Is(err, ErrNotFound):
		m.fail("get %d: %v %v, want not found", id, got, err)
	}
}
