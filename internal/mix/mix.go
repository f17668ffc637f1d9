// Package mix holds the 64-bit finalisers the project hashes with: functions
// in which every input bit moves every output bit, so that structured
// inputs (addresses, counters, shingle hashes) spread evenly over a
// bitmap, a bin or a shard.
//
// Their outputs are stored (sketches, fingerprints) and sent (shard
// placement): a change to either is a change of format.
package mix

// Murmur3 is MurmurHash3's 64-bit finaliser (fmix64).
func Murmur3(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

// SplitMix64 is the finaliser of the SplitMix64 generator (Stafford's
// variant 13).
func SplitMix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
