//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package engine

import "unsafe"

// load64 reads 8 bytes at p, little-endian, unaligned: one instruction here.
func load64(p unsafe.Pointer) uint64 { return *(*uint64)(p) }
