package api

import "github.com/simhashdb/simhashdb/internal/mix"

// ShardOf is the shard, of n, that holds the document id in an index
// split over shards by id: its id mixed (SplitMix64's finalizer), modulo
// n. Clients place writes with it and nodes of a sharded log check theirs.
func ShardOf(id uint64, n int) int {
	return int(mix.SplitMix64(id+0x9e3779b97f4a7c15) % uint64(n))
}
