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
