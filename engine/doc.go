// Package engine is the simhashdb database: a persistent index of 64-bit
// SimHash fingerprints on Pebble, answering "which stored documents lie within
// Hamming distance k" online, in batches and across the corpus. It is being
// built; see README.md for its state.
package engine
