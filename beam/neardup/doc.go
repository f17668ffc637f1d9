// Package neardup is simhashdb's batch jobs as Apache Beam transforms, for
// fingerprint collections larger than one machine: every pair within
// Hamming distance k (FindAll), the connected components of that graph
// (LargeStar and SmallStar rounds, then StarClusters), queries against
// stored fingerprints (Batch), and the permuted tables written as the
// paper's compressed blocks (BuildTables). Each gives the same answer as
// the simhashdb command on the same input; the algorithms are the core
// module's (permutation, engine/join, codec), not copies.
//
// Fingerprints travel between stages packed, 8 bytes each, in batches of
// up to BatchSize ([]byte), because Beam's coders spend about 10 bytes and
// an element's overhead on every uint64 otherwise. Exact duplicates are
// collapsed (with their counts) before anything is keyed by a table's
// prefix, so that a fingerprint repeated a million times (the empty page)
// is one value, not a hot key.
//
// Every stage counts what it did in Beam counters of namespace Namespace
// (see Counters).
//
// DoFns that run once an element on the jobs' hot paths (reading
// documents, counting them, scanning a table's group, matching a batch's
// queries) are registered with the register package's generic wrappers,
// which call them without reflection; the others, and the functions, by
// reflection (beam.RegisterType, beam.RegisterFunction): each generic
// registration costs the compiler seconds and hundreds of MB, and these
// cost the workers little (docs/beam.md).
package neardup
