package replica

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/permutation"
)

// TestRecentVotes: votes no decision waits for yet are kept for one to
// come, within bounds, and only for commands the node has not reached.
func TestRecentVotes(t *testing.T) {
	d, err := permutation.Blocks(3, 4)
	require.NoError(t, err)
	db, err := engine.Open(t.TempDir(), engine.Options{Design: d, Sync: engine.SyncNone})
	require.NoError(t, err)
	defer db.Close()
	n := &Node{db: db, opts: Options{Stream: "s", Shard: 0, Shards: 2}, voteWaits: map[uint64]chan *nats.Msg{}, recent: map[uint64][]*nats.Msg{}}
	vote := func(seq uint64, size int) *nats.Msg {
		return &nats.Msg{Subject: voteSubject("s", seq, 1), Data: make([]byte, size)}
	}

	n.passed.Store(10)
	n.onVote(vote(10, 1)) // gone past
	n.onVote(&nats.Msg{Subject: "s.vote.x.1"})
	n.onVote(&nats.Msg{Subject: "t.vote.11.1"})
	assert.Empty(t, n.recent)

	for seq := uint64(11); seq < 11+2*recentVotes; seq++ {
		n.onVote(vote(seq, 10))
	}
	assert.Len(t, n.recent, recentVotes, "the latest commands' votes")
	assert.Contains(t, n.recent, uint64(10+2*recentVotes))
	assert.NotContains(t, n.recent, uint64(11))

	for i := range 40 {
		n.onVote(vote(uint64(5000+i), 1<<20))
	}
	assert.LessOrEqual(t, n.recentBytes, recentVoteBytes)
	total := 0
	for _, ms := range n.recent {
		for _, m := range ms {
			total += len(m.Data)
		}
	}
	assert.Equal(t, total, n.recentBytes)

	// A decision takes the votes kept for it, then those that come.
	ch := n.waitVotes(5039, 2)
	require.Len(t, ch, 1)
	assert.Equal(t, voteSubject("s", 5039, 1), (<-ch).Subject)
	assert.NotContains(t, n.recent, uint64(5039))
	n.onVote(vote(5039, 3))
	require.Len(t, ch, 1)
	n.doneVotes(5039)
	assert.Empty(t, n.voteWaits)
}

func TestVoteOf(t *testing.T) {
	n := &Node{opts: Options{Stream: "idx"}}
	for _, c := range []struct {
		subject string
		seq     uint64
		shard   int
		ok      bool
	}{
		{"idx.vote.12.3", 12, 3, true},
		{voteSubject("idx", 1<<63, 0), 1 << 63, 0, true},
		{"idx.vote.12", 0, 0, false},
		{"idx.vote.12.-1", 0, 0, false},
		{"idx.vote.a.1", 0, 0, false},
		{"other.vote.12.3", 0, 0, false},
	} {
		seq, shard, ok := n.voteOf(c.subject)
		assert.Equal(t, c.ok, ok, c.subject)
		if c.ok {
			assert.Equal(t, fmt.Sprint(c.seq, c.shard), fmt.Sprint(seq, shard), c.subject)
		}
	}
}
