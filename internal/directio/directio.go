// Package directio holds what reading around the page cache takes: buffers
// aligned as O_DIRECT wants them, and dropping a file's pages from the
// page cache so that its next reads go to the disk (the benchmarks' cold
// runs, tests of the engine's reads).
package directio

import "unsafe"

// Align is the alignment O_DIRECT asks of a read's offset, length and
// buffer: the page size covers every block size a Linux file system uses.
const Align = 4096

// Aligned returns a buffer of n bytes whose first byte is Align aligned.
func Aligned(n int) []byte {
	b := make([]byte, n+Align)
	skip := (Align - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))&(Align-1))) & (Align - 1)
	return b[skip : skip+n : skip+n]
}
