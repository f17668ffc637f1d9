// Package textindex answers the question users of a near-duplicate index
// ask about text: which stored documents are near-duplicates of this one,
// and which pairs of them are? A 64-bit fingerprint alone cannot answer it
// with both recall and precision, so a text index keeps a record of each
// document's shingles (package sketch) beside its fingerprint: a 32-byte
// sketch that estimates the Jaccard similarity of two documents, then band
// keys of the same minima (sketch.Layout) from which all pairs are found.
//
// A query's candidates come from the fingerprint's tables: documents within
// a generous distance (K, six bits by default: every one within five and
// most at six, with 12 tables where finding every one within six would
// take 28; permutation.ForCandidates). All pairs (Pairs, PairsWith,
// Clusters, Stars) come from the band keys instead: the documents that
// share a key, found by sorts on disk in time linear in the documents and
// memory set by JoinOptions, whatever the corpus, and kept when their
// sketches estimate at least the similarity asked (DefaultSimilarity
// unless told). An index is made for a lowest similarity (OptionsAt) and
// refuses one below it (ErrBelowMinSimilarity).
//
// Open gives an Index: an engine index created with Options and the Schema
// it reads text by, kept with it. Its Add, Similar, InsertIfNew, Pairs and
// Clusters take and answer text. Underneath, a Reader fingerprints and
// sketches a document in one read, and Verify, Pairs, Clusters, Stars and
// InsertIfNew verify the engine's answers, for callers that drive the
// engine themselves. An index of sketches alone (made before band keys)
// finds pairs among the fingerprints within K; one without sketches
// answers by distance alone.
package textindex
