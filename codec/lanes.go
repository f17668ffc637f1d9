package codec

import "github.com/simhashdb/simhashdb/huffman"

// laneState is where each of the three decoding chains of a block stands.
type laneState struct {
	pos [3]int    // bit offset of the chain's next entry
	fp  [3]uint64 // the chain's last value
}

// quickLanes decodes up to m entries of each chain, the i-th of the three
// into out[i], out[m+i] and out[2m+i], from the state st, which it
// updates. It stops before an entry it cannot take quickly: one whose 16
// bytes run past src, that is not a code word, or that wraps its chain's
// sum. It returns the number of whole rounds done and, when it stopped
// inside a round, how many of its chains had decoded their entry (0-2).
// It needs m > 0, len(out) >= 3m and len(src) >= 16. On amd64 it is
// written in assembly (lanes_amd64.s); quickLanesGo is the same in Go.
//
// The state stays in registers: each step is two loads of the 16 bytes at
// the chain's bit offset, a double shift to align them, one table look-up,
// and shifts that extract the difference.

// quickLanesGo is quickLanes in Go, used where there is no assembly and in
// tests as its reference.
func quickLanesGo(st *laneState, src []byte, tbl *[1 << huffman.MaxLen]uint16, out []uint64, m int) (done, part int) {
	for i := range m {
		for c := range 3 {
			p, f := st.pos[c], st.fp[c]
			if p>>3+16 > len(src) {
				return i, c
			}
			d, w := step(src, tbl, p)
			if w == 0 || f+d <= f {
				return i, c
			}
			st.pos[c], st.fp[c] = p+w, f+d
			out[c*m+i] = f + d
		}
	}
	return m, 0
}
