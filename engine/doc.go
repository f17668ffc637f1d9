// Package engine is the simhashdb database: a persistent index of 64-bit
// SimHash fingerprints on Pebble that answers "which stored documents lie
// within Hamming distance k of this fingerprint", the system of Manku, Jain
// and Das Sarma (WWW 2007) as an embedded store.
//
// # Data model
//
// A document is a uint64 id with a fingerprint and an optional short name
// (a URL, a path) that queries return. Several documents may share one
// fingerprint. Inserting an existing id replaces its fingerprint and name.
//
// # Storage
//
// One Pebble database holds, behind one-byte key prefixes: metadata (format
// version, table design, Huffman codes, counters), documents (id ->
// fingerprint, name), postings (fingerprint, id -> name), and one keyspace
// per permuted table whose keys are the last permuted fingerprint of a block
// and whose values are the paper's Huffman-coded blocks (package codec). A
// small directory of block keys and sizes is kept in memory, as the paper
// keeps its block index, so that a warm probe finds its block without asking
// Pebble.
//
// # Writes
//
// Insert and Delete append to the engine's write-ahead log (package wal);
// concurrent writers share one write and fsync. A write is acknowledged once
// it is durable as the SyncMode promises, and becomes visible to queries in
// the order of the log. The memtable keeps recent writes searchable; when it
// fills, a flush merges it into the tables, commits the result to Pebble
// atomically with the documents and postings, and then drops the log
// segments it covers. A flush appends a block's new fingerprints to the
// block's pending list (up to 96, stored beside it and merged with it by
// every reader) without reading the block or the list, and rewrites the
// block only when the list is full or a fingerprint leaves, so that its
// cost follows what it adds, not the size of the index. The tables are
// merged on every core. Unless set, the memtable's budget grows with the
// index (5 bytes per fingerprint, 64 MiB to 1 GiB), so that a flush adds
// several fingerprints to each block it touches however large the index.
// Each new fingerprint costs a flush one postings look-up, to tell it from
// one stored already; postings keys split after the fingerprint
// (store.KeyOrder), so Pebble's bloom filters answer most of those look-ups
// without reading a data block.
//
// # Queries
//
// A query of distance k <= K probes every table: it permutes the query, scans
// the blocks whose range shares the table's top p_i bits, and keeps the
// entries within distance k (the distance is the same in permuted space).
// Memtable matches are added, deleted documents dropped, and the result
// sorted by distance.
//
// # Contexts
//
// A call whose context is done before it starts returns the context's
// error and changes nothing. Calls that run long (Load, Flush, Warm, Check,
// and the streams: Docs, FindAll, Clusters, Stars, QueryBatch) also stop
// when it is done while they run; a write already in the log stays
// acknowledged.
package engine
