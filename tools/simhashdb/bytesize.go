package main

import (
	"fmt"
	"math"

	"github.com/dustin/go-humanize"
)

// byteSize is a flag of a number of bytes, written with a unit or without
// one: 65536, 64KiB, 64 MiB, 1GB (SI units are powers of 1000, IEC units
// of 1024, as go-humanize reads them). It prints in IEC units.
type byteSize int64

func (b *byteSize) Set(s string) error {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return fmt.Errorf("want a number of bytes, such as 65536, 64KiB or 1GiB")
	}
	if n > math.MaxInt64 {
		return fmt.Errorf("%d bytes is too many", n)
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) String() string {
	if b == nil {
		return "0"
	}
	return sizeText(int64(*b))
}

// sizeText writes n bytes for messages, in IEC units.
func sizeText(n int64) string { return humanize.IBytes(uint64(n)) }
