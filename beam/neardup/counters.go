package neardup

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
)

// Namespace is the namespace of every counter of this package.
const Namespace = "simhashdb"

// The counters' names.
const (
	CounterLines         = "lines_read"          // input lines and documents read
	CounterBad           = "bad_lines"           // of them malformed (see the bad output)
	CounterFingerprints  = "fingerprints"        // fingerprints read
	CounterDistinct      = "distinct"            // distinct fingerprints
	CounterDuplicateSets = "duplicate_groups"    // fingerprints that occur more than once
	CounterShuffleBytes  = "shuffle_bytes"       // bytes of packed batches handed to a shuffle
	CounterPairs         = "pairs"               // pair lines written (find-all: within k, "[v, v]" of duplicates too), matches (batch)
	CounterStarChanges   = "star_changes"        // edges a star round changed; 0: converged
	CounterClusters      = "clusters"            // clusters written
	CounterTableFPs      = "table_fingerprints_" // + table number: fingerprints written (build)
	CounterTableBytes    = "table_bytes_"        // + table number: bytes of blocks written (build)
)

var (
	linesRead     = beam.NewCounter(Namespace, CounterLines)
	badLines      = beam.NewCounter(Namespace, CounterBad)
	fingerprints  = beam.NewCounter(Namespace, CounterFingerprints)
	distinctFPs   = beam.NewCounter(Namespace, CounterDistinct)
	duplicateSets = beam.NewCounter(Namespace, CounterDuplicateSets)
	shuffleBytes  = beam.NewCounter(Namespace, CounterShuffleBytes)
	pairsFound    = beam.NewCounter(Namespace, CounterPairs)
	starChanges   = beam.NewCounter(Namespace, CounterStarChanges)
	clustersCount = beam.NewCounter(Namespace, CounterClusters)
)

// Counters returns the committed (else attempted) values of this package's
// counters in a pipeline's result, summed over the steps that count them.
func Counters(r beam.PipelineResult) map[string]int64 {
	out := map[string]int64{}
	if r == nil {
		return out
	}
	for _, c := range r.Metrics().Query(func(sr metrics.SingleResult) bool { return sr.Namespace() == Namespace }).Counters() {
		out[c.Name()] += c.Result()
	}
	return out
}
