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
	pa, pb, pc := st.pos[0], st.pos[1], st.pos[2]
	fa, fb, fc := st.fp[0], st.fp[1], st.fp[2]
	oa, ob, oc := out[:m], out[m:2*m], out[2*m:3*m]
	defer func() { st.pos, st.fp = [3]int{pa, pb, pc}, [3]uint64{fa, fb, fc} }()
	// One chain's step, then the next: written apart so that few values
	// are live at once; the core overlaps them.
	for i := range oa {
		if pa>>3+16 > len(src) {
			return i, 0
		}
		da, wa := step(src, tbl, pa)
		if wa == 0 || fa+da <= fa {
			return i, 0
		}
		pa, fa = pa+wa, fa+da
		oa[i] = fa
		if pb>>3+16 > len(src) {
			return i, 1
		}
		db, wb := step(src, tbl, pb)
		if wb == 0 || fb+db <= fb {
			return i, 1
		}
		pb, fb = pb+wb, fb+db
		ob[i] = fb
		if pc>>3+16 > len(src) {
			return i, 2
		}
		dc, wc := step(src, tbl, pc)
		if wc == 0 || fc+dc <= fc {
			return i, 2
		}
		pc, fc = pc+wc, fc+dc
		oc[i] = fc
	}
	return m, 0
}
