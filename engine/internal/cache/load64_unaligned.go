//go:build 386 || amd64 || arm64 || ppc64le

package cache

import "unsafe"

// load64 reads 8 bytes at p, little-endian, unaligned: one instruction on
// these little-endian architectures, where an unaligned load is safe and
// costs no more than an aligned one. Elsewhere (arm, mips, riscv64 and
// the big-endian ones) load64_portable.go reads byte by byte.
func load64(p unsafe.Pointer) uint64 { return *(*uint64)(p) }

// toOffsets rewrites fps as their offsets from base, in the byte order
// load64 reads: the machine's own here.
func toOffsets(fps []uint64, base uint64) {
	for i := range fps {
		fps[i] -= base
	}
}
