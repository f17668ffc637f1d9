// Package cache holds decoded table blocks and units of postings in
// memory: Packed, a sorted run of fingerprints (with ids, for postings) as
// offsets from its first one in the fewest bits, searched by interpolation;
// Entry, a packed block with its pending list or a unit with its names;
// Slot, where the engine's block directory keeps an entry, found with an
// index and an atomic load; and Cache, which bounds their bytes and evicts
// with the CLOCK algorithm. It knows nothing of Pebble or of the engine.
package cache
