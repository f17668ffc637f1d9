//go:build !purego

package codec

import (
	"unsafe"

	"github.com/simhashdb/simhashdb/huffman"
)

func quickLanes(st *laneState, src []byte, tbl *[1 << huffman.MaxLen]uint16, out []uint64, m int) (done, part int) {
	return quickLanesAsm(st, unsafe.SliceData(src), tbl, unsafe.SliceData(out), m*8, m, (len(src)-16)*8+7)
}

// quickLanesAsm is quickLanes on raw pointers: stride is m*8 bytes, and
// limit is the highest bit offset whose 16 bytes lie within src.
//
//go:noescape
func quickLanesAsm(st *laneState, src *byte, tbl *[1 << huffman.MaxLen]uint16, out *uint64, stride, n, limit int) (done, part int)
