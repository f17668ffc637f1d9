package textscale

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/cespare/xxhash/v2"
	"github.com/simhashdb/simhashdb/internal/dataset"
	"github.com/simhashdb/simhashdb/internal/mix"
)

// Perms is the baseline's number of permutations: datasketch's default.
const Perms = 128

// LSHParams returns the bands and rows of a MinHash LSH of Perms
// permutations for a threshold, as datasketch chooses them: the pair that
// minimises the area of false positives below the threshold plus that of
// false negatives above it, equally weighted.
func LSHParams(threshold float64) (bands, rows int) {
	p := func(s float64, b, r int) float64 { return 1 - math.Pow(1-math.Pow(s, float64(r)), float64(b)) }
	area := func(lo, hi float64, f func(float64) float64) float64 {
		const n = 200
		sum := 0.0
		for i := range n {
			sum += f(lo + (hi-lo)*(float64(i)+0.5)/n)
		}
		return sum * (hi - lo) / n
	}
	best := math.Inf(1)
	for b := 1; b <= Perms; b++ {
		for r := 1; b*r <= Perms; r++ {
			fp := area(0, threshold, func(s float64) float64 { return p(s, b, r) })
			fn := area(threshold, 1, func(s float64) float64 { return 1 - p(s, b, r) })
			if e := 0.5*fp + 0.5*fn; e < best {
				best, bands, rows = e, b, r
			}
		}
	}
	return bands, rows
}

// MinHashPairs is the baseline: the MinHash of Perms permutations of each
// document's 5-word shingles (Shingles), a MinHash LSH of them in memory
// (LSHParams), and the candidates of its buckets kept when their
// signatures estimate at least threshold. It reads the dataset in path
// and writes each pair's ids as a JSON line {"a", "b"} to out.
func MinHashPairs(path string, threshold float64, out io.Writer) error {
	f, err := dataset.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var ids []uint64
	var sigs []uint32 // Perms a document
	for rec, err := range f.Records(dataset.Options{}) {
		if err != nil {
			return err
		}
		ids = append(ids, rec.ID)
		sigs = appendSignature(sigs, Shingles(rec.Text))
	}
	bands, rows := LSHParams(threshold)
	seen := map[uint64]struct{}{}
	w := bufio.NewWriterSize(out, 1<<20)
	enc := json.NewEncoder(w)
	var key []byte
	for b := range bands {
		buckets := map[uint64][]uint32{}
		for d := range ids {
			key = key[:0]
			for _, v := range sigs[d*Perms+b*rows : d*Perms+(b+1)*rows] {
				key = binary.LittleEndian.AppendUint32(key, v)
			}
			h := xxhash.Sum64(key)
			buckets[h] = append(buckets[h], uint32(d))
		}
		for _, docs := range buckets {
			for i, x := range docs {
				for _, y := range docs[i+1:] {
					k := uint64(x)<<32 | uint64(y)
					if _, ok := seen[k]; ok {
						continue
					}
					seen[k] = struct{}{}
					if estimate(sigs[int(x)*Perms:int(x+1)*Perms], sigs[int(y)*Perms:int(y+1)*Perms]) >= threshold {
						a, b := min(ids[x], ids[y]), max(ids[x], ids[y])
						if err := enc.Encode(map[string]uint64{"a": a, "b": b}); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return w.Flush()
}

// appendSignature appends the MinHash of a shingle set: for each
// permutation, the least of a mix of each shingle's hash.
func appendSignature(dst []uint32, set map[string]struct{}) []uint32 {
	start := len(dst)
	for range Perms {
		dst = append(dst, math.MaxUint32)
	}
	sig := dst[start:]
	for s := range set {
		h := xxhash.Sum64String(s)
		for i := range sig {
			if v := uint32(mix.Murmur3(h ^ uint64(i+1)*0x9e3779b97f4a7c15)); v < sig[i] {
				sig[i] = v
			}
		}
	}
	return dst
}

func estimate(a, b []uint32) float64 {
	n := 0
	for i := range a {
		if a[i] == b[i] {
			n++
		}
	}
	return float64(n) / float64(len(a))
}

// ReadPairs reads the pairs a run wrote: JSON lines with "a" and "b" ids
// (the baseline's) or documents (find-all --db's), each pair once, the
// smaller id first.
func ReadPairs(path string) (map[[2]uint64]struct{}, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[[2]uint64]struct{}{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var p struct {
			A, B json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		a, err := pairID(p.A)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		b, err := pairID(p.B)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		k := [2]uint64{min(a, b), max(a, b)}
		out[k] = struct{}{}
	}
	return out, sc.Err()
}

func pairID(raw json.RawMessage) (uint64, error) {
	if len(raw) > 0 && raw[0] == '{' {
		var d struct{ ID uint64 }
		err := json.Unmarshal(raw, &d)
		return d.ID, err
	}
	var id uint64
	err := json.Unmarshal(raw, &id)
	return id, err
}
