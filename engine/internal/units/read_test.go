package units

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/vfs"
	"github.com/stretchr/testify/require"
)

type posting struct {
	fp, id uint64
	name   string
}

// postingsIn commits ps to a store of its own and returns an iterator
// over its postings.
func postingsIn(t *testing.T, ps []posting) *store.Iter {
	t.Helper()
	s, err := store.Open(t.TempDir(), store.Options{FS: vfs.Default, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, NewOrder: store.KeyOrder})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	b := s.NewBatch()
	for _, p := range ps {
		require.NoError(t, b.Set(format.PostingKey(p.fp, p.id), []byte(p.name)))
	}
	require.NoError(t, s.Commit(context.Background(), s.BatchWrites(b)))
	require.NoError(t, b.Close())
	lo, hi := format.SpaceBounds(format.SpacePostings)
	it, err := s.NewIter(store.IterOptions{Lower: lo, Upper: hi})
	require.NoError(t, err)
	t.Cleanup(func() { it.Close() })
	return it
}

// TestRead checks a unit read from the store: every posting of the unit
// and none of its neighbours', names kept, cached after the first read,
// and a unit of more than max postings told apart (and cached as such).
func TestRead(t *testing.T) {
	const docs = 64 * 2 // two unit bits: units are the top two bits
	d := New(docs, 5)
	require.Equal(t, uint(62), d.Shift())
	// Unit 1 has three fingerprints, one with two documents; unit 2 has
	// six postings, more than max; units 0 and 3 one each.
	want := []posting{{0, 1, ""}, {1 << 62, 2, "a"}, {1<<62 | 5, 3, ""}, {1<<62 | 5, 4, "bb"}, {1<<62 | 9, 5, "c"}}
	for i := range 6 {
		want = append(want, posting{2<<62 | uint64(i), uint64(10 + i), fmt.Sprint(i)})
	}
	want = append(want, posting{^uint64(0), 20, "z"})
	it := postingsIn(t, want)
	c := cache.New(1 << 20)
	for range 2 { // read, then cached
		e, ok, err := d.Read(c, it, 1<<62|5)
		require.NoError(t, err)
		require.True(t, ok)
		var got []posting
		for i := range e.Packed.Len() {
			got = append(got, posting{e.Packed.At(i), e.Packed.ID(i), e.Name(i)})
		}
		require.Equal(t, want[1:5], got)
		require.NotNil(t, c.Load(d.Slot(1)), "unit 1 cached")
	}
	e, ok, err := d.Read(c, it, 2<<62)
	require.NoError(t, err)
	require.False(t, ok, "unit 2 holds more than max postings")
	require.Nil(t, e)
	require.True(t, c.Load(d.Slot(2)).Big)
	_, ok, err = d.Read(c, it, 2<<62|3)
	require.NoError(t, err)
	require.False(t, ok, "a big unit stays big")
}

// iterScanner serves ScanMany with an iterator, leaving the spans miss
// names.
type iterScanner struct {
	it   *store.Iter
	miss map[int]bool
}

func (iterScanner) Mapped() bool { return true }

func (s iterScanner) ScanMany(spans [][2][]byte, fn func(i int, k, v []byte) error) (missed []int, err error) {
	for i, sp := range spans {
		if s.miss[i] {
			missed = append(missed, i)
			continue
		}
		for ok := s.it.SeekGE(sp[0]); ok && string(s.it.Key()) < string(sp[1]); ok = s.it.Next() {
			v, err := s.it.Value()
			if err != nil {
				return nil, err
			}
			if err := fn(i, s.it.Key(), v); err != nil {
				return nil, err
			}
		}
	}
	return missed, s.it.Error()
}

// fourUnits is postings in each unit of a directory of two unit bits, in
// order: unit 2 holds six, more than a max of 5; units 0 and 3 start and
// end the keyspace.
func fourUnits() []posting {
	var ps []posting
	for _, fp := range []uint64{0, 1 << 62, 1<<62 | 5, 1<<62 | 9, ^uint64(0) - 1, ^uint64(0)} {
		ps = append(ps, posting{fp, fp % 1000, fmt.Sprint("n", fp%1000)})
	}
	for i := range 6 {
		ps = append(ps, posting{2<<62 | uint64(i), uint64(10 + i), ""})
	}
	slices.SortFunc(ps, func(a, b posting) int { return cmp.Compare(a.fp, b.fp) })
	return ps
}

// requireSameUnit checks that got holds want's postings and names.
func requireSameUnit(t *testing.T, want, got *cache.Entry) {
	t.Helper()
	require.NotNil(t, got)
	require.Equal(t, want.Packed.Len(), got.Packed.Len())
	for i := range want.Packed.Len() {
		require.Equal(t, want.Packed.At(i), got.Packed.At(i))
		require.Equal(t, want.Packed.ID(i), got.Packed.ID(i))
		require.Equal(t, want.Name(i), got.Name(i))
	}
}

// TestReadMany checks units read together against Read's: each unit's
// postings (the last unit's to the keyspace's end), big units told apart,
// one unit asked for twice read once, and a unit the scanner leaves not
// cached.
func TestReadMany(t *testing.T) {
	d := New(64*2, 5)
	it := postingsIn(t, fourUnits())

	many, one := cache.New(1<<20), cache.New(1<<20)
	// Units 3, 1, 2 and 0 asked for; the scanner leaves its fourth span
	// (unit 0).
	fps := []uint64{^uint64(0), 1<<62 | 9, 1 << 62, 2 << 62, 5}
	require.NoError(t, d.ReadMany(many, iterScanner{it, map[int]bool{3: true}}, fps))
	require.Nil(t, many.Load(d.Slot(0)), "the unit the scanner left")
	require.True(t, many.Load(d.Slot(2)).Big)
	for _, fp := range []uint64{^uint64(0), 1 << 62} {
		want, ok, err := New(64*2, 5).Read(one, it, fp) // a directory of its own: the slots are the directory's
		require.NoError(t, err)
		require.True(t, ok)
		requireSameUnit(t, want, many.Load(d.Slot(d.Unit(fp))))
	}
	require.Equal(t, 2, many.Load(d.Slot(3)).Packed.Len(), "the last unit to the keyspace's end")
	require.NoError(t, d.ReadMany(many, iterScanner{it, nil}, []uint64{5}))
	require.NotNil(t, many.Load(d.Slot(0)))
}

// TestAhead checks a unit read ahead: none for a unit cached; its span
// gives, through Keep, what Read caches (names kept, a big unit marked);
// Holds says which fingerprints' postings it would hold; and a span the
// scan leaves, or a posting key not of the format, caches nothing.
func TestAhead(t *testing.T) {
	d := New(64*2, 5)
	it := postingsIn(t, fourUnits())
	for _, fp := range []uint64{1<<62 | 7, 2 << 62, ^uint64(0)} {
		ahead, one := cache.New(1<<20), cache.New(1<<20)
		a := d.Ahead(fp)
		require.NotNil(t, a)
		require.True(t, a.Holds(fp))
		require.False(t, a.Holds(fp^1<<63), "another unit")
		a.Keep(ahead, spanScan{it, a.Span(), false, nil})
		a.Release()
		require.Nil(t, d.Ahead(fp), "cached: nothing to read ahead")
		want, ok, err := New(64*2, 5).Read(one, it, fp) // a directory of its own: the slots are the directory's
		require.NoError(t, err)
		got := ahead.Load(d.Slot(d.Unit(fp)))
		if !ok {
			require.True(t, got.Big, "a big unit, as Read found it")
			continue
		}
		requireSameUnit(t, want, got)
	}
	for _, sc := range []spanScan{{miss: true}, {bad: []byte("not a posting")}} {
		c := cache.New(1 << 20)
		a := d.Ahead(0)
		sc.it, sc.span = it, a.Span()
		a.Keep(c, sc)
		a.Release()
		require.Nil(t, c.Load(d.Slot(0)))
	}
}

// spanScan serves Ahead.Keep's scan of one span with an iterator: or
// leaves it (miss), or gives it a key bad first.
type spanScan struct {
	it   *store.Iter
	span [2][]byte
	miss bool
	bad  []byte
}

func (s spanScan) Scan(fn func(i int, k, v []byte) error) (missed []int, err error) {
	if s.miss {
		return []int{0}, nil
	}
	if s.bad != nil {
		if err := fn(0, s.bad, nil); err != nil {
			return nil, err
		}
	}
	for ok := s.it.SeekGE(s.span[0]); ok && string(s.it.Key()) < string(s.span[1]); ok = s.it.Next() {
		v, err := s.it.Value()
		if err != nil {
			return nil, err
		}
		if err := fn(0, s.it.Key(), v); err != nil {
			return nil, err
		}
	}
	return nil, s.it.Error()
}
