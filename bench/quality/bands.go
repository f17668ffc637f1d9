package quality

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/simhashdb/simhashdb/sketch"
)

// EvaluateBands scores another way for the tables to propose candidates:
// a fingerprint made of bands MinHash values (one minimum of the page's
// shingles under an independent hash each, 64/bands bits of it), each
// band the prefix of a table of its own, so that two pages are candidates
// when they share a band, and a sketch decides at threshold. A pair of
// Jaccard J shares a band with probability J, and is missed with
// probability (1-J)^bands whatever its language or length; the price is
// the pages that share a band without being near (Candidates), each a
// document the sketch must be read for. Pages without shingles are left
// out (an index refuses them).
func (r *Release) EvaluateBands(bands int, threshold float64) VerifiedResult {
	width := 64 / bands
	oldFP, oldSk := banded(r.Old, bands)
	newFP, newSk := banded(r.New, bands)
	mask := uint64(1)<<width - 1
	candidate := func(i, j int) bool {
		if len(r.Old[i].Shingles) == 0 || len(r.New[j].Shingles) == 0 {
			return false
		}
		for b := range bands {
			if (oldFP[i]>>(b*width))&mask == (newFP[j]>>(b*width))&mask {
				return true
			}
		}
		return false
	}
	res := VerifiedResult{Collection: r.Name, Reader: fmt.Sprintf("%d MinHash bands of %d bits", bands, width), Within: 64, Threshold: threshold}
	r.scoreCandidates(&res, candidate, oldSk, newSk)
	return res
}

// HotBand returns the most pages of both releases that share one band's
// value: the candidates one query's probe of that band proposes.
func (r *Release) HotBand(bands int) int {
	oldFP, _ := banded(r.Old, bands)
	newFP, _ := banded(r.New, bands)
	width := 64 / bands
	mask := uint64(1)<<width - 1
	hot := 0
	for b := range bands {
		count := map[uint64]int{}
		for _, fps := range [][]uint64{oldFP, newFP} {
			for _, fp := range fps {
				v := fp >> (b * width) & mask
				count[v]++
				hot = max(hot, count[v])
			}
		}
	}
	return hot
}

// banded returns each page's fingerprint of bands MinHash bands, and its
// sketch.
func banded(pages []Page, bands int) ([]uint64, []sketch.Sketch) {
	width := 64 / bands
	fps, sks := make([]uint64, len(pages)), make([]sketch.Sketch, len(pages))
	parallel(len(pages), func(i int) {
		for b := range bands {
			// The minimum's own high bits are mostly 0: hashed again,
			// every bit of a band tells minima apart.
			m := hash64(minimum(pages[i].Shingles, uint64(b+1)*0x9e3779b97f4a7c15))
			fps[i] = fps[i]<<width | m>>(64-width)
		}
		sks[i] = sketch.Of(pages[i].Shingles)
	})
	return fps, sks
}

// minimum is the least hash of the shingles under the hash salted by salt.
func minimum(shingles []uint64, salt uint64) uint64 {
	m := ^uint64(0)
	for _, s := range shingles {
		m = min(m, hash64(s^salt))
	}
	return m
}

func hash64(x uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], x)
	return xxhash.Sum64(b[:])
}
