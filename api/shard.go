package api

// ShardOf is the shard, of n, that holds the document id in an index
// split over shards by id: its id mixed (SplitMix64's finalizer), modulo
// n. Clients place writes with it and nodes of a sharded log check theirs.
func ShardOf(id uint64, n int) int {
	z := id + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return int((z ^ z>>31) % uint64(n))
}
