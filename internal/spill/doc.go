// Package spill keeps sorted runs of records on disk for a sort larger
// than memory (a bulk load's documents): a Writer appends records in
// order, a Reader reads them back, and Merge yields the records of many
// runs in one order.
//
// A record is two 64-bit keys and a value of up to MaxValue bytes; runs
// are sorted by (A, B). A run is a sequence of blocks, each
//
//	length  uint32, little-endian: the payload's bytes
//	crc     uint32, little-endian: CRC-32C (Castagnoli) of the payload
//	payload records, each: uvarint len(V) | A uint64 LE | B uint64 LE | V
//
// A run is scratch, read back by the process that wrote it, but it comes
// from disk: a Reader checks every block's checksum and every record's
// bounds and order, and names the run and the block's offset in its error.
package spill
