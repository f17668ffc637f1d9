package server

import (
	"context"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
)

// Writes is where a Server sends its writes (Options.Writes): the index
// itself by default, or a node of a replicated index (package replica),
// which publishes them to the cluster's log and answers once it has
// applied them to the index the Server reads. Writes that also have a
// method Sharding() (shard, shards int) are a shard's, and decide
// insert-if-new over shards shards (replica.Node.Sharding).
type Writes interface {
	// Write stores c.Insert and removes c.Delete in one commit.
	Write(ctx context.Context, c engine.Commit) error
	// InsertIfNew is the crawler's decision (engine.DB.InsertIfNew).
	InsertIfNew(ctx context.Context, d engine.Doc, k int) ([]engine.Match, bool, error)
	// InsertIfNewSimilar is the decision verified by sketches
	// (textindex.InsertIfNew).
	InsertIfNewSimilar(ctx context.Context, d engine.Doc, k int, similarity float64) ([]textindex.Match, bool, error)
	// SetSetting keeps a setting unless the index keeps it already
	// (api.KeepSetting: the same value is left, another refused).
	SetSetting(ctx context.Context, name string, value []byte) error
	// Latest returns once the index holds every write acknowledged,
	// anywhere, before it was called ("latest" queries).
	Latest(ctx context.Context) error
}

// local is Writes into the Server's own index.
type local struct{ db *engine.DB }

func (l local) Write(ctx context.Context, c engine.Commit) error { return l.db.Apply(ctx, c) }

func (l local) InsertIfNew(ctx context.Context, d engine.Doc, k int) ([]engine.Match, bool, error) {
	return l.db.InsertIfNew(ctx, d, k)
}

func (l local) InsertIfNewSimilar(ctx context.Context, d engine.Doc, k int, similarity float64) ([]textindex.Match, bool, error) {
	return textindex.InsertIfNew(ctx, l.db, d, k, similarity)
}

func (l local) SetSetting(ctx context.Context, name string, value []byte) error {
	return api.KeepSetting(ctx, l.db, name, value)
}

// Latest has nothing to wait for: every acknowledged write is in the index.
func (local) Latest(context.Context) error { return nil }
