// Package codec is the on-disk block format of simhashdb's permuted tables,
// the compression scheme of Manku et al. section 3.1.3: a block holds sorted,
// distinct (permuted) fingerprints, each after the first as the Huffman code
// of h followed by the 63-h bits below the most significant 1-bit, with one
// change: h is the position of the top 1-bit of the difference to the
// predecessor (its leading zeros), where the paper takes their XOR. The
// XOR's top bit sits above the difference's whenever adding the gap
// carries, so the XOR form stores the carried bits, which are all but
// determined, and codes positions where the predecessor holds a 1, which
// cannot occur: the difference comes closer to the information bound
// (docs/performance.md, compression).
//
// A block's key, under which the store keeps it, is its last fingerprint,
// and the decoder is given it: a block does not repeat it. Layout of a
// version 3 block (at most the block size, 1024 bytes by default), byte by
// byte:
//
//	byte 0       bits 0-1: the version, 3; bits 2-7: the code id (which
//	             Huffman code the block was written with) if below 63,
//	             else 63
//	bytes 1..    the code id, uvarint, if 63 or more
//	             count, uvarint: number of fingerprints, >= 1, the key
//	             included
//	             split 1, split 2: bit offsets in entries of entries m+1
//	             and 2m+1, m = (count-1)/3, where the second and third
//	             decoding chains start, each as the zigzag uvarint of its
//	             difference from E*m/(count-1) and E*2m/(count-1), E the
//	             entries' bits (the block's bytes after the splits, x8):
//	             where it would be if every entry were as long, a byte
//	             mostly
//	             entries: count-1 x (Huffman(h), then the 63-h bits of
//	             next-prev below its top 1-bit), most significant bit
//	             first, zero-padded to a byte; they take the block to its
//	             end
//
// The first fingerprint is the key less the sum of the differences. A
// version 3 block has no checksum of its own: the store checksums every
// block of its files (Pebble's sstable blocks), and a block stream (stream.go)
// checksums each block with its key. The decoder still checks everything
// the layout constrains: the chains end where the splits say, the entries
// end at the block's end but for zero padding, no sum wraps, and the
// differences do not add up to more than the key.
//
// Versions 1 and 2 are still read. Version 2 has the version in its first
// byte (2) and the code id in a uvarint after it, stores the first fingerprint
// whole (8 bytes, big-endian) after the splits, the key as its last entry,
// and a CRC-32C of the block (4 bytes, little-endian) after the entries;
// version 1 is version 2 without the splits.
//
// Decoding an entry needs the bit position where the previous one ended, so
// a block is one long dependency chain of loads and table look-ups. The
// split offsets cut it in three: entries 1..m, m+1..2m and 2m+1..count-1
// are decoded as three independent chains in one loop, the later two as
// differences from the entry before them, and a pass of additions then
// makes them absolute. An out-of-order core overlaps the chains. On amd64
// that loop is written in assembly (lanes_amd64.s), because Go's register
// allocator spills the three chains' state on every step (the gain is in
// bench/results/journal.md); build with the purego tag for the Go loop, which is
// also its reference in tests.
package codec
