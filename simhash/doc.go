// Package simhash turns documents into 64-bit SimHash fingerprints
// (Charikar's simhash, as Manku, Jain and Das Sarma use it to find
// near-duplicate web pages): near-duplicate texts get fingerprints that
// differ in few bits, and Distance counts them.
//
// A Fingerprinter is a pipeline: Unicode NFKC and case folding, a tokenizer
// (words of any script; CJK text as character bigrams), optional stop
// words, shingles (a moving window of tokens), weights (term frequency, its
// logarithm, binary, or an IDF table learnt from a corpus) and a 64-bit
// feature hash (xxHash64 by default, FNV-1 for compatibility). Default()
// is the pipeline simhashdb measured best on real near-duplicates: 2-word
// shingles with term-frequency weights. Bit i of a fingerprint is 1 when
// the weighted vote of the features' bit i is positive (TiesToOne: not
// negative), so the empty document's fingerprint is 0.
//
// Fingerprinters read strings, bytes, io.Readers (streamed, in constant
// memory) and HTML (its visible text); Document reads a file by its
// content (decompressing gzip and bzip2, HTML known by its start, XML and
// manual pages' roff source too from PipelineV3 on, binaries and documents
// without words refused). Sum takes features a caller made.
// Options.Pipeline versions the way text becomes weighted features and
// files are read: the zero value is PipelineV1, whose fingerprints never
// change; PipelineV2 weighs features holding numbers NumberWeight;
// LatestPipeline (v3) weighs them by the document's length
// (NumberFeatures) and reads XML and manual pages by their content.
// Format and Parse write and read fingerprints as "0x" and 16 hex digits.
package simhash
