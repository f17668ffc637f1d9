package replica

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
)

// A log that several shards share (Options.Shards) has three kinds of
// subjects: each shard's writes and settings, which that shard's nodes
// apply; the insert-if-new commands, which every shard decides against
// its own documents; and the votes that carry those decisions to the
// document's shard, one subject a command and shard.
func shardSubject(stream string, shard int) string {
	return stream + ".shard." + strconv.Itoa(shard)
}

func ifNewSubject(stream string) string { return stream + ".ifnew" }

func voteSubject(stream string, seq uint64, shard int) string {
	return fmt.Sprintf("%s.vote.%d.%d", stream, seq, shard)
}

// streamSubjects is what a stream holds: one index's commands, or those
// of shards sharing it.
func streamSubjects(stream string, shards int) []string {
	if shards <= 1 {
		return []string{stream + ".commands"}
	}
	return []string{stream + ".shard.*", ifNewSubject(stream), stream + ".vote.*.*"}
}

// voteWarnEvery is how long a decision waits for a shard's vote before
// the node says so (and again each time after): a shard with no node up
// holds every insert-if-new of the index, and its own shard's writes.
const voteWarnEvery = 10 * time.Second

// vote is this node's shard's part of the insert-if-new command c at
// seq: its documents within c.k (verified when c compares sketches), as
// the index stands at seq.
func (n *Node) vote(ctx context.Context, c command) (vote, error) {
	d := c.commit.Insert[0]
	ms, err := n.db.Query(ctx, d.Fingerprint, c.k)
	switch {
	case refused(err):
		return vote{refused: err.Error()}, nil
	case err != nil:
		return vote{}, err
	case c.similarity != nil:
		v := textindex.Verify(ms, d.Sketch, *c.similarity)
		if v == nil {
			v = []textindex.Match{}
		}
		return vote{verified: v, count: len(v)}, nil
	}
	return vote{matches: ms, count: len(ms)}, nil
}

// publishVote publishes this node's shard's vote on the command at seq.
// Every node of the shard publishes the same one; the stream keeps the
// first of those within its window of duplicates, and any later copy is
// the same vote.
func (n *Node) publishVote(ctx context.Context, seq uint64, v vote) error {
	b, err := encodeVote(v, n.nc.MaxPayload())
	if err != nil {
		return err
	}
	subject := voteSubject(n.opts.Stream, seq, n.opts.Shard)
	wait := minRetry
	for {
		_, err := n.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: b}, jetstream.WithMsgID(subject), jetstream.WithExpectStream(n.opts.Stream))
		var api *jetstream.APIError
		if !errors.As(err, &api) || api.ErrorCode != duplicateInProcess {
			if err != nil {
				return fmt.Errorf("publishing the vote of shard %d on command %d: %w", n.opts.Shard, seq, err)
			}
			return nil
		}
		// Another node of the shard is publishing the same vote: it is
		// done once the stream holds it, which that node may not see
		// through (killed), so ask, and publish again if it is not there.
		select {
		case <-ctx.Done():
			return fmt.Errorf("publishing the vote of shard %d on command %d: %w", n.opts.Shard, seq, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
		if _, err := n.stream.GetLastMsgForSubject(ctx, subject); err == nil {
			return nil
		}
	}
}

// duplicateInProcess is JetStream's answer to a message whose id a
// publish of another client is storing at that moment.
const duplicateInProcess jetstream.ErrorCode = 10158

// decideShards is the decision on the insert-if-new command c at seq, of
// this node's shard (the document's): its own vote with those of every
// other shard, which it waits for. The document is inserted when no
// shard holds a near-duplicate; a shard that refused the command refuses
// the decision.
func (n *Node) decideShards(ctx context.Context, seq uint64, c command) result {
	own, err := n.vote(ctx, c)
	if err != nil {
		return result{err: err}
	}
	votes, err := n.votes(ctx, seq, c)
	if err != nil {
		return result{err: err}
	}
	votes[n.opts.Shard] = own
	return tally(votes)
}

// tally is the decision of every shard's votes: the document goes in when
// no shard holds a near-duplicate (a vote's count, not the matches it had
// room for), the near-duplicates in the order of an answer.
func tally(votes map[int]vote) result {
	var r result
	found := 0 // near-duplicates on every shard, those a vote left out too
	for _, shard := range slices.Sorted(maps.Keys(votes)) {
		v := votes[shard]
		if v.refused != "" {
			return result{err: fmt.Errorf("%w: shard %d refused it: %s", engine.ErrInput, shard, v.refused)}
		}
		r.matches = append(r.matches, v.matches...)
		r.verified = append(r.verified, v.verified...)
		found += v.count
	}
	slices.SortFunc(r.matches, engine.Nearer)
	slices.SortFunc(r.verified, textindex.MoreSimilar)
	r.inserted = found == 0
	return r
}

// votes waits for the votes on the command at seq of every shard but
// this node's, by shard: those the stream holds already, then those
// published after.
func (n *Node) votes(ctx context.Context, seq uint64, c command) (map[int]vote, error) {
	// Waiting before asking the stream, so that no vote falls between.
	ch := n.waitVotes(seq, c.shards)
	defer n.doneVotes(seq)
	votes := map[int]vote{}
	add := func(shard int, data []byte) error {
		v, err := decodeVote(data, c.similarity != nil)
		if err != nil {
			return fmt.Errorf("%w: the vote of shard %d on command %d: %v", engine.ErrInput, shard, seq, err)
		}
		votes[shard] = v
		return nil
	}
	// A vote published between the subscription and the stream storing
	// it reaches neither: the stream is asked again after each wait.
	stored := func() error {
		for shard := range c.shards {
			if _, ok := votes[shard]; ok || shard == n.opts.Shard {
				continue
			}
			m, err := n.stream.GetLastMsgForSubject(ctx, voteSubject(n.opts.Stream, seq, shard))
			switch {
			case errors.Is(err, jetstream.ErrMsgNotFound):
				continue
			case err != nil:
				return fmt.Errorf("asking stream %s for the votes on command %d: %w", n.opts.Stream, seq, err)
			}
			if err := add(shard, m.Data); err != nil {
				return err
			}
		}
		return nil
	}
	// A node that keeps up has seen the votes come or sees them coming; one
	// catching up asks the stream for those it missed.
	if n.lag.Load() > 0 {
		if err := stored(); err != nil {
			return nil, err
		}
	}
	wait, waited := minRetry, time.Duration(0)
	for len(votes) < c.shards-1 {
		var m *nats.Msg
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the votes on command %d (%d of %d in): %w", seq, len(votes)+1, c.shards, ctx.Err())
		case m = <-ch:
		case <-time.After(wait):
			if waited += wait; waited >= voteWarnEvery {
				n.opts.Logger.Warn("simhashdb replica: waiting for shards' votes on an insert-if-new", "stream", n.opts.Stream, "sequence", seq, "missing", missing(votes, c.shards, n.opts.Shard))
				waited = 0
			}
			wait = min(2*wait, maxRetry)
			if err := stored(); err != nil {
				return nil, err
			}
			continue
		}
		_, shard, ok := n.voteOf(m.Subject)
		if !ok || shard >= c.shards || shard == n.opts.Shard {
			continue // not a vote this decision takes
		}
		if _, ok := votes[shard]; !ok {
			if err := add(shard, m.Data); err != nil {
				return nil, err
			}
		}
	}
	return votes, nil
}

// onVote hands a vote published on the stream to the decision waiting
// for it, or keeps it for one to come (the latest recentVotes commands'):
// the stream holds it too, for a decision that comes to it later. A node
// subscribes once to every vote, as a subscription made for one decision
// may reach the NATS servers after the vote it awaits.
func (n *Node) onVote(m *nats.Msg) {
	seq, _, ok := n.voteOf(m.Subject)
	if !ok {
		return
	}
	n.voteMu.Lock()
	defer n.voteMu.Unlock()
	if ch := n.voteWaits[seq]; ch != nil {
		select {
		case ch <- m:
		default: // full (copies of one vote): asked of the stream
		}
		return
	}
	if seq <= n.position() || len(n.recent[seq]) >= 4 {
		return // decided, or gone past; or copies enough
	}
	n.recent[seq] = append(n.recent[seq], m)
	n.recentBytes += len(m.Data)
	for len(n.recent) > recentVotes || n.recentBytes > recentVoteBytes {
		first := slices.Min(slices.Collect(maps.Keys(n.recent)))
		for _, m := range n.recent[first] {
			n.recentBytes -= len(m.Data)
		}
		delete(n.recent, first)
	}
}

// recentVotes and recentVoteBytes bound the votes a node keeps for
// decisions to come; one past them asks the stream.
const (
	recentVotes     = 1024
	recentVoteBytes = 16 << 20
)

// waitVotes is where the votes on the command at seq come, those kept
// first, until doneVotes.
func (n *Node) waitVotes(seq uint64, shards int) chan *nats.Msg {
	n.voteMu.Lock()
	defer n.voteMu.Unlock()
	kept := n.recent[seq]
	for _, m := range kept {
		n.recentBytes -= len(m.Data)
	}
	delete(n.recent, seq)
	ch := make(chan *nats.Msg, 2*shards+len(kept))
	for _, m := range kept {
		ch <- m
	}
	n.voteWaits[seq] = ch
	return ch
}

func (n *Node) doneVotes(seq uint64) {
	n.voteMu.Lock()
	delete(n.voteWaits, seq)
	n.voteMu.Unlock()
}

// voteOf is the command and shard of a vote's subject.
func (n *Node) voteOf(subject string) (seq uint64, shard int, ok bool) {
	rest, found := strings.CutPrefix(subject, n.opts.Stream+".vote.")
	if !found {
		return 0, 0, false
	}
	seqs, shards, _ := strings.Cut(rest, ".")
	seq, err1 := strconv.ParseUint(seqs, 10, 64)
	shard, err2 := strconv.Atoi(shards)
	return seq, shard, err1 == nil && err2 == nil && shard >= 0
}

// missing is the shards whose votes have not come.
func missing(votes map[int]vote, shards, own int) []int {
	var out []int
	for s := range shards {
		if _, ok := votes[s]; !ok && s != own {
			out = append(out, s)
		}
	}
	return out
}

// checkShard refuses a document or id that another shard holds.
func (n *Node) checkShard(id uint64) error {
	if n.opts.Shards <= 1 {
		return nil
	}
	if s := api.ShardOf(id, n.opts.Shards); s != n.opts.Shard {
		return fmt.Errorf("%w: document %d is shard %d's of %d; this node is shard %d's", engine.ErrInput, id, s, n.opts.Shards, n.opts.Shard)
	}
	return nil
}

// shardsKey is the stream's metadata that says how many shards share it.
const shardsKey = "simhashdb.shards"

// streamMetadata is what a node that creates the stream records in it.
func streamMetadata(shards int) map[string]string {
	if shards <= 1 {
		return nil
	}
	return map[string]string{shardsKey: strconv.Itoa(shards)}
}

// checkLayout refuses a stream made for another layout: one index's
// commands where the node is a shard's, or another count of shards.
func (n *Node) checkLayout(cfg jetstream.StreamConfig) error {
	want := streamSubjects(n.opts.Stream, n.opts.Shards)
	sameSubjects := slices.Equal(slices.Sorted(slices.Values(cfg.Subjects)), slices.Sorted(slices.Values(want)))
	if sameSubjects && cfg.Metadata[shardsKey] == streamMetadata(n.opts.Shards)[shardsKey] {
		return nil
	}
	layout := func(shards string) string {
		if shards == "" {
			return "one index's log"
		}
		return "the log of " + shards + " shards"
	}
	return fmt.Errorf("%w: replica: stream %s is %s (subjects %s), this node is one of %s: start every node of the index alike (serve --shard), or name another stream",
		engine.ErrInput, n.opts.Stream, layout(cfg.Metadata[shardsKey]), strings.Join(cfg.Subjects, " "), layout(streamMetadata(n.opts.Shards)[shardsKey]))
}

// position is the last command of the stream that this node has applied
// or gone past.
func (n *Node) position() uint64 { return max(n.db.Applied(), n.passed.Load()) }
