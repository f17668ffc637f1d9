//go:build !amd64 || purego

package codec

import "github.com/simhashdb/simhashdb/huffman"

func quickLanes(st *laneState, src []byte, tbl *[1 << huffman.MaxLen]uint16, out []uint64, m int) (done, part int) {
	return quickLanesGo(st, src, tbl, out, m)
}
