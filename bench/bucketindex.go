package bench

import (
	"fmt"
	"math/bits"
)

// bucketIndex is the strongest in-memory baseline we know for one query at
// a time: go-simstore's design (its New3Small, for k = 3), written here
// from its description, not its code. The fingerprint is cut into k+1
// blocks; two fingerprints within distance k agree on at least one whole
// block (pigeonhole), so each block has a table of 2^(block bits) buckets
// keyed by that block's value, and a query scans the k+1 buckets of its
// blocks, checking every entry by popcount. The buckets are one array per
// table with offsets (no slice per bucket), 8 bytes a fingerprint and
// table: tighter than go-simstore's own (about 100 bytes a fingerprint).
type bucketIndex struct {
	k     int
	shift []uint     // per block: where its bits start
	mask  []uint64   // per block: its bits, at the bottom
	start [][]uint32 // per block: where each bucket starts in fps, and the end
	fps   [][]uint64 // per block: the fingerprints, by bucket
}

// maxBucketBits bounds a block, so that the offsets stay small (k >= 2).
const maxBucketBits = 22

func newBucketIndex(k int, distinct []uint64) (*bucketIndex, error) {
	nb := k + 1
	if (64+nb-1)/nb > maxBucketBits {
		return nil, fmt.Errorf("bucket baseline: k = %d makes blocks of more than %d bits", k, maxBucketBits)
	}
	if int64(len(distinct)) >= 1<<32 {
		return nil, fmt.Errorf("bucket baseline: %d fingerprints, at most 2^32", len(distinct))
	}
	b := &bucketIndex{k: k}
	at := uint(64)
	for i := range nb {
		w := uint(64 / nb)
		if i < 64%nb {
			w++
		}
		at -= w
		b.shift = append(b.shift, at)
		b.mask = append(b.mask, 1<<w-1)
	}
	for i := range nb {
		start := make([]uint32, b.mask[i]+2)
		for _, v := range distinct {
			start[(v>>b.shift[i])&b.mask[i]+1]++
		}
		for j := 1; j < len(start); j++ {
			start[j] += start[j-1]
		}
		fill := make([]uint32, len(start)-1)
		copy(fill, start)
		fps := make([]uint64, len(distinct))
		for _, v := range distinct {
			key := (v >> b.shift[i]) & b.mask[i]
			fps[fill[key]] = v
			fill[key]++
		}
		b.start = append(b.start, start)
		b.fps = append(b.fps, fps)
	}
	return b, nil
}

// bytes is the memory of the tables.
func (b *bucketIndex) bytes() int64 {
	var n int64
	for i := range b.fps {
		n += int64(len(b.fps[i]))*8 + int64(len(b.start[i]))*4
	}
	return n
}

// query appends the fingerprints within k of q to out[:0], each once: a
// fingerprint is reported by the first block it shares with q.
func (b *bucketIndex) query(q uint64, k int, out []uint64) []uint64 {
	out = out[:0]
	for i := range b.fps {
		key := (q >> b.shift[i]) & b.mask[i]
		for _, v := range b.fps[i][b.start[i][key]:b.start[i][key+1]] {
			x := v ^ q
			if bits.OnesCount64(x) > k || b.sharesEarlier(i, x) {
				continue
			}
			out = append(out, v)
		}
	}
	return out
}

// sharesEarlier tells whether a block before block i is equal in two
// fingerprints whose XOR is x.
func (b *bucketIndex) sharesEarlier(i int, x uint64) bool {
	for j := range i {
		if (x>>b.shift[j])&b.mask[j] == 0 {
			return true
		}
	}
	return false
}
