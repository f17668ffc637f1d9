package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
)

// The waits between attempts to apply the stream again after it failed
// (a lost connection, a stream leader being elected, a full disk).
const (
	minRetry = 50 * time.Millisecond
	maxRetry = 2 * time.Second
)

// run applies the stream until ctx is done, starting again after
// db.Applied whenever applying stops.
func (n *Node) run(ctx context.Context) {
	defer close(n.done)
	wait := minRetry
	for {
		moved, err := n.consume(ctx)
		if ctx.Err() != nil {
			return
		}
		n.mu.Lock()
		n.lastErr = err
		close(n.watch) // waiters for the latest state learn why they wait
		n.watch = make(chan struct{})
		n.mu.Unlock()
		n.opts.Logger.Warn("simhashdb replica: applying the stream stopped; starting again", "stream", n.opts.Stream, "applied", n.db.Applied(), "err", err)
		if moved {
			wait = minRetry
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
	}
}

// consume applies the stream's commands from the one after db.Applied
// until an error; moved says whether it applied any.
func (n *Node) consume(ctx context.Context) (moved bool, err error) {
	cons, err := n.js.OrderedConsumer(ctx, n.opts.Stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: n.position() + 1,
	})
	if err != nil {
		return false, fmt.Errorf("reading stream %s: %w", n.opts.Stream, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return false, fmt.Errorf("reading stream %s: %w", n.opts.Stream, err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	n.mu.Lock()
	n.lastErr = nil
	n.mu.Unlock()
	for {
		msg, err := it.Next()
		if err != nil {
			return moved, fmt.Errorf("reading stream %s: %w", n.opts.Stream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return moved, fmt.Errorf("reading stream %s: %w", n.opts.Stream, err)
		}
		n.applyMu.Lock()
		err = n.applyNext(ctx, md.Sequence.Stream, msg.Subject(), msg.Headers().Get(jetstream.MsgIDHeader), msg.Data())
		n.applyMu.Unlock()
		if err != nil {
			return moved, err
		}
		moved = true
		n.lag.Store(md.NumPending)
	}
}

// applyNext applies the command at seq, published on subject, if it is
// the next one (one applied already is skipped): in a log that shards
// share, the node's shard's commands are applied, insert-if-new commands
// decided with the other shards, and the rest gone past. The caller
// holds applyMu.
func (n *Node) applyNext(ctx context.Context, seq uint64, subject, id string, data []byte) error {
	switch pos := n.position(); {
	case seq <= pos:
		return nil
	case seq != pos+1:
		return fmt.Errorf("stream %s holds no commands %d to %d (removed by its limits or a purge): this node cannot catch up from the stream alone", n.opts.Stream, pos+1, seq-1)
	}
	switch {
	case n.opts.Shards <= 1 || subject == n.subject:
		return n.apply(ctx, seq, id, data)
	case subject == ifNewSubject(n.opts.Stream):
		return n.applyIfNew(ctx, seq, id, data)
	}
	n.pass(seq)
	return nil
}

// pass records that the node went past the command at seq without
// writing, and wakes those waiting for it.
func (n *Node) pass(seq uint64) {
	n.passed.Store(seq)
	n.mu.Lock()
	close(n.watch)
	n.watch = make(chan struct{})
	n.lastErr = nil
	n.mu.Unlock()
}

// applyIfNew takes the insert-if-new command at seq of a log that shards
// share: the document's shard decides and applies it (apply, decide), any
// other shard publishes its vote and goes past. A command whose count of
// shards is not the node's stops applying: the nodes would not agree on
// the document's shard.
func (n *Node) applyIfNew(ctx context.Context, seq uint64, id string, data []byte) error {
	c, err := decodeCommand(data)
	if err != nil || !c.ifNew {
		// Every shard's nodes go past it; those of the shard whose node
		// published it, if any, tell the caller.
		return n.apply(ctx, seq, id, data)
	}
	if c.shards != n.opts.Shards {
		return fmt.Errorf("command %d is an insert-if-new over %d shards; this node is shard %d of %d: start every node of the stream with the same count of shards", seq, c.shards, n.opts.Shard, n.opts.Shards)
	}
	if api.ShardOf(c.commit.Insert[0].ID, c.shards) == n.opts.Shard {
		return n.apply(ctx, seq, id, data)
	}
	v, err := n.vote(ctx, c)
	if err != nil {
		return fmt.Errorf("deciding command %d: %w", seq, err)
	}
	if err := n.publishVote(ctx, seq, v); err != nil {
		return err
	}
	n.pass(seq)
	return nil
}

// apply applies the command at seq, published with message id id, and
// answers its caller if it is waiting on this node. A command the index
// refuses (bad input, every node refuses it alike) is recorded as applied
// with nothing written, and its caller is told why; any other failure
// stops applying, to be tried again.
func (n *Node) apply(ctx context.Context, seq uint64, id string, data []byte) error {
	var r result
	c, err := decodeCommand(data)
	if err != nil {
		r.err = fmt.Errorf("%w: stream %s, command %d: %v", engine.ErrInput, n.opts.Stream, seq, err)
		n.opts.Logger.Error("simhashdb replica: skipping a command", "stream", n.opts.Stream, "sequence", seq, "err", err)
	} else {
		r = n.decide(ctx, seq, c)
	}
	if r.err != nil && !refused(r.err) {
		return fmt.Errorf("deciding command %d: %w", seq, r.err)
	}
	commit := engine.Commit{Position: seq}
	if r.err == nil && (!c.ifNew || r.inserted) {
		commit.Insert, commit.Delete = c.commit.Insert, c.commit.Delete
	}
	err = n.db.Apply(ctx, commit)
	if refused(err) && len(commit.Insert)+len(commit.Delete) > 0 {
		r = result{err: err}
		err = n.db.Apply(ctx, engine.Commit{Position: seq})
	}
	switch {
	case errors.Is(err, engine.ErrApplied):
		return nil
	case err != nil:
		return fmt.Errorf("applying command %d: %w", seq, err)
	}
	n.mu.Lock()
	ch := n.pending[id]
	delete(n.pending, id)
	close(n.watch)
	n.watch = make(chan struct{})
	n.lastErr = nil
	n.mu.Unlock()
	if ch != nil {
		ch <- r
	}
	return nil
}

// decide is an insert-if-new command's decision against the index as it
// stands (every node decides it at the same place in the stream): the
// documents that keep it out, or inserted; or a setting kept.
func (n *Node) decide(ctx context.Context, seq uint64, c command) result {
	if c.setting != nil {
		return result{err: api.KeepSetting(ctx, n.db, c.setting.name, c.setting.value)}
	}
	if !c.ifNew {
		return result{}
	}
	if c.shards > 1 || n.opts.Shards > 1 {
		if c.shards != n.opts.Shards {
			return result{err: fmt.Errorf("%w: an insert-if-new over %d shards in a log of %d", engine.ErrInput, c.shards, n.opts.Shards)}
		}
		return n.decideShards(ctx, seq, c)
	}
	d := c.commit.Insert[0]
	ms, err := n.db.Query(ctx, d.Fingerprint, c.k)
	if err != nil {
		return result{err: err}
	}
	if c.similarity != nil {
		v := textindex.Verify(ms, d.Sketch, *c.similarity)
		return result{verified: v, inserted: len(v) == 0}
	}
	return result{matches: ms, inserted: len(ms) == 0}
}

// refused says whether err is the index refusing a command's content,
// which every node does alike.
func refused(err error) bool {
	return errors.Is(err, engine.ErrInput) || errors.Is(err, engine.ErrDistance)
}
