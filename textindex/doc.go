// Package textindex answers the question users of a near-duplicate index
// ask about text: which stored documents are near-duplicates of this one?
// A 64-bit fingerprint alone cannot answer it with both recall and
// precision, so a text index keeps a small sketch of each document's
// shingles (package sketch) beside its fingerprint: the tables propose
// documents within a generous distance (K, six bits by default: every one
// within five and most at six, with 12 tables where finding every one
// within six would take 28; permutation.ForCandidates), and the sketch
// keeps those whose estimated Jaccard similarity reaches a threshold
// (DefaultSimilarity).
//
// Open gives an Index: an engine index created with Options (sketches
// kept with each document) and the Schema it reads text by, kept with it.
// Its Add, Similar, InsertIfNew, Pairs and Clusters take and answer text.
// Underneath, a Reader fingerprints and sketches a document in one read,
// and Verify, Pairs, Clusters, Stars and InsertIfNew verify the engine's
// answers, for callers that drive the engine themselves. An index without
// sketches (made before them, or of fingerprints only) answers by
// distance alone.
package textindex
