package simhash

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
)

// Hash maps a feature (a normalised token) to 64 bits. Bit i of the hash votes
// for bit i of the fingerprint, bit 0 being the least significant.
type Hash func(token []byte) uint64

// XXHash is the default feature hash: xxHash64 with seed 0 over the token's
// UTF-8 bytes. It is fast and its bits are close to independent, which
// simhash needs.
func XXHash(token []byte) uint64 { return xxhash.Sum64(token) }

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// FNV1 is the 64-bit FNV-1 hash (multiply, then xor) over the token's UTF-8
// bytes.
func FNV1(token []byte) uint64 {
	h := uint64(fnvOffset64)
	for _, c := range token {
		h *= fnvPrime64
		h ^= uint64(c)
	}
	return h
}

// FNV1UTF16 is 64-bit FNV-1 over the token's UTF-16 code units, as Java's
// String.charAt yields them. With it, TiesToOne and the caller's own tokens and
// weights, Fingerprinter reproduces the Java simhash of seed 001: that code
// reads hash bit (63-i) as "bit i" and sets fingerprint bit (63-i) from it, so
// its bit order is the same as ours and needs no reversal; its vector test is
// ">= 0", which is what TiesToOne selects.
func FNV1UTF16(token []byte) uint64 {
	h := uint64(fnvOffset64)
	for len(token) > 0 {
		r, n := utf8.DecodeRune(token)
		token = token[n:]
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			h = (h * fnvPrime64) ^ uint64(r1)
			h = (h * fnvPrime64) ^ uint64(r2)
			continue
		}
		h = (h * fnvPrime64) ^ uint64(r)
	}
	return h
}
