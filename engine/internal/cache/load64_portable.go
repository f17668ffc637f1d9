//go:build !(386 || amd64 || arm64 || ppc64le)

package cache

import (
	"encoding/binary"
	"unsafe"
)

// load64 reads 8 bytes at p, little-endian, unaligned.
func load64(p unsafe.Pointer) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(p), 8))
}

// toOffsets rewrites fps as their offsets from base, little-endian as load64
// reads them, whatever the machine's byte order.
func toOffsets(fps []uint64, base uint64) {
	if len(fps) == 0 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&fps[0])), 8*len(fps))
	for i, v := range fps {
		binary.LittleEndian.PutUint64(b[8*i:], v-base)
	}
}
