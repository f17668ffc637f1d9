// Package textindex answers the question users of a near-duplicate index
// ask about text: which stored documents are near-duplicates of this one?
// A 64-bit fingerprint alone cannot answer it with both recall and
// precision, so a text index keeps a small sketch of each document's
// shingles (package sketch) beside its fingerprint: the tables propose
// every document within a generous distance (K, six bits by default), and
// the sketch keeps those whose estimated Jaccard similarity reaches a
// threshold (DefaultSimilarity).
//
// A text index is an engine index created with Options (sketches kept
// with each document) and fed by a Reader, which fingerprints and
// sketches a document in one read. Query answers, pairs and clusters are
// engine answers verified by Verify, Pairs and Clusters. An index without
// sketches (made before them, or of fingerprints only) answers by
// distance alone.
package textindex
