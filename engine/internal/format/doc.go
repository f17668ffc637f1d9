// Package format is the one home of every byte layout the engine keeps:
// the keys of its keyspaces (keys.go), the values stored under them
// (values.go), the pending lists beside table blocks (pending.go) and the
// records of the write-ahead log (walrecord.go). Each layout has one
// encoder, one decoder and a fuzz target here; the table blocks themselves
// are package codec's.
//
// Every decoder's error for bytes it cannot read matches ErrCorrupt (the
// engine's ErrCorrupt), and one about a table block is a *BlockError that
// names the table and the block.
package format
