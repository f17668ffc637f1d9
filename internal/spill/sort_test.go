package spill

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// memScratch keeps runs in memory.
type memScratch map[string]*bytes.Buffer

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

func (m memScratch) CreateScratch(name string) (io.WriteCloser, error) {
	b := &bytes.Buffer{}
	m[name] = b
	return nopCloser{b}, nil
}

func (m memScratch) OpenScratch(name string) (io.ReadCloser, error) {
	b, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("no run %s", name)
	}
	return io.NopCloser(bytes.NewReader(b.Bytes())), nil
}

type doc struct {
	id, fp uint64
	name   string
}

// genDocs is n documents with ids from a small range (repeats) and
// fingerprints with heavy duplicates, 0 and all-ones; named ones with a
// name, some empty.
func genDocs(rng *rand.Rand, n int, named bool) []doc {
	fps := []uint64{0, ^uint64(0), 42}
	docs := make([]doc, n)
	for i := range docs {
		d := doc{id: rng.Uint64N(uint64(n)), fp: rng.Uint64()}
		if rng.IntN(3) == 0 {
			d.fp = fps[rng.IntN(len(fps))]
		}
		if named && rng.IntN(4) != 0 {
			d.name = fmt.Sprintf("doc-%d-%d", d.id, i)
		}
		docs[i] = d
	}
	return docs
}

// lastByID is the oracle: the last document of each id, by id.
func lastByID(docs []doc) []doc {
	last := map[uint64]doc{}
	for _, d := range docs {
		last[d.id] = d
	}
	return slices.SortedFunc(maps.Values(last), func(a, b doc) int { return cmp.Compare(a.id, b.id) })
}

func partOf(docs []doc) *Part {
	p := &Part{}
	for _, d := range docs {
		p.Add(d.id, d.fp, "", d.name)
	}
	return p
}

func TestPart(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, named := range []bool{false, true} {
		t.Run(fmt.Sprint(named), func(t *testing.T) {
			docs := genDocs(rng, 5000, named)
			p := partOf(docs)
			require.Equal(t, 5000, p.Len())
			for i, d := range docs {
				require.Equal(t, d.name, string(p.Name(i)))
			}
			want := lastByID(docs)
			p.SortByID()
			require.Equal(t, len(want), p.Len())
			for i, d := range want {
				require.Equal(t, d, doc{p.IDs[i], p.FPs[i], string(p.Name(i))})
			}
			keys, ids, order := p.ByPosting()
			byPosting := slices.Clone(want)
			slices.SortFunc(byPosting, func(a, b doc) int { return cmp.Or(cmp.Compare(a.fp, b.fp), cmp.Compare(a.id, b.id)) })
			require.Equal(t, named, order != nil)
			for i, d := range byPosting {
				name := ""
				if order != nil {
					name = string(p.Name(int(order[i])))
				}
				require.Equal(t, d, doc{ids[i], keys[i], name}, "posting %d", i)
			}
			p.Reset()
			require.Zero(t, p.Len())
			require.False(t, p.Named())
		})
	}
}

// TestSort: documents spilled in parts come back by id, the last part's of
// a repeated id, and their postings by (fingerprint, id) without those of
// replaced documents, as the oracle says.
func TestSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, tc := range []struct {
		n, parts int
		named    bool
	}{{0, 0, false}, {1, 1, true}, {3000, 1, true}, {3000, 4, false}, {3000, 7, true}, {20000, 13, true}} {
		t.Run(fmt.Sprintf("n=%d,parts=%d,named=%v", tc.n, tc.parts, tc.named), func(t *testing.T) {
			docs := genDocs(rng, tc.n, tc.named)
			s := NewSort(memScratch{})
			per := (tc.n + max(tc.parts, 1) - 1) / max(tc.parts, 1)
			for lo := 0; lo < tc.n; lo += per {
				require.NoError(t, s.Spill(partOf(docs[lo:min(lo+per, tc.n)])))
			}
			require.Equal(t, tc.parts, s.Runs())
			want := lastByID(docs)
			var got []doc
			check := func(what string, err error) {
				require.NoError(t, err, what)
				require.Equal(t, len(want), len(got), what)
				for i := range want {
					require.Equal(t, want[i], got[i], what)
				}
				got = got[:0]
			}
			check("by id", s.Docs(func(id, fp uint64, name []byte) error {
				got = append(got, doc{id, fp, string(name)})
				return nil
			}))
			slices.SortFunc(want, func(a, b doc) int { return cmp.Or(cmp.Compare(a.fp, b.fp), cmp.Compare(a.id, b.id)) })
			check("by posting", s.Postings(func(fp, id uint64, name []byte) error {
				got = append(got, doc{id, fp, string(name)})
				return nil
			}))
		})
	}
}

// TestSortDamage: a run damaged between Spill and the merge is an error
// that wraps ErrCorrupt and names the run; an error of the caller's stops
// the merge with it.
func TestSortDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	docs := genDocs(rng, 20000, true)
	scratch := memScratch{}
	s := NewSort(scratch)
	require.NoError(t, s.Spill(partOf(docs[:10000])))
	require.NoError(t, s.Spill(partOf(docs[10000:])))
	stop := fmt.Errorf("stop")
	require.ErrorIs(t, s.Docs(func(uint64, uint64, []byte) error { return stop }), stop)
	b := scratch["run-1-by-id"].Bytes()
	b[len(b)/2] ^= 4
	err := s.Docs(func(uint64, uint64, []byte) error { return nil })
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "run-1-by-id")
	b = scratch["run-0-by-posting"].Bytes()
	b[len(b)-1] ^= 4
	err = s.Postings(func(uint64, uint64, []byte) error { return nil })
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "run-0-by-posting")
}
