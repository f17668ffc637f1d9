package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: n.db.Applied() + 1,
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
	// A reader hands the messages over as they come, so that the applier
	// takes every one waiting at once and applies them as one group.
	entries := make(chan entry, maxGroup)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			e := entry{}
			msg, err := it.Next()
			if err == nil {
				var md *jetstream.MsgMetadata
				if md, err = msg.Metadata(); err == nil {
					e = entry{seq: md.Sequence.Stream, id: msg.Headers().Get(jetstream.MsgIDHeader), data: msg.Data(), pending: md.NumPending}
				}
			}
			if err != nil {
				e.err = fmt.Errorf("reading stream %s: %w", n.opts.Stream, err)
			}
			select {
			case entries <- e:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		group := []entry{<-entries}
	more:
		for len(group) < maxGroup && group[len(group)-1].err == nil {
			select {
			case e := <-entries:
				group = append(group, e)
			default:
				break more
			}
		}
		last := group[len(group)-1]
		if last.err != nil {
			group = group[:len(group)-1]
		}
		n.applyMu.Lock()
		err := n.applyGroup(ctx, group)
		n.applyMu.Unlock()
		switch {
		case err != nil:
			return moved, err
		case len(group) > 0:
			moved = true
			n.lag.Store(group[len(group)-1].pending)
		}
		if last.err != nil {
			return moved, last.err
		}
	}
}

// maxGroup bounds the commands applied as one group.
const maxGroup = 256

// entry is a message of the stream as the applier takes it, or the error
// that ended reading.
type entry struct {
	seq, pending uint64
	id           string
	data         []byte
	err          error
}

// applyGroup applies the commands of group, skipping those applied
// already: runs of writes that touch no id another of the run wrote
// before go as one engine commit at the run's last sequence (one log
// append for many, the same documents as one at a time); the rest one at
// a time. The caller holds applyMu.
func (n *Node) applyGroup(ctx context.Context, group []entry) error {
	for i := 0; i < len(group); {
		if group[i].seq <= n.db.Applied() {
			i++
			continue
		}
		if k, c := n.writeRun(group[i:]); k > 1 {
			c.Position = group[i+k-1].seq
			err := n.db.Apply(ctx, c)
			if err == nil {
				for _, e := range group[i : i+k] {
					n.answer(e.id, result{})
				}
				n.grouped.Add(int64(k))
				i += k
				continue
			}
			if !refused(err) {
				return fmt.Errorf("applying commands %d to %d: %w", group[i].seq, c.Position, err)
			}
			// One of them is refused: one at a time says which.
		}
		if err := n.applyNext(ctx, group[i].seq, group[i].id, group[i].data); err != nil {
			return err
		}
		i++
	}
	return nil
}

// writeRun returns how many of es, from the first, are write commands at
// consecutive sequences that may go as one commit, and that commit: no
// command of the run inserts an id that one before it inserted or
// deleted (a commit inserts, then deletes).
func (n *Node) writeRun(es []entry) (int, engine.Commit) {
	if es[0].seq != n.db.Applied()+1 {
		return 0, engine.Commit{}
	}
	var run engine.Commit
	touched := map[uint64]bool{}
	k := 0
	for j, e := range es {
		if j > 0 && e.seq != es[j-1].seq+1 {
			break
		}
		c, err := decodeCommand(e.data)
		if err != nil || c.ifNew || c.setting != nil || slices.ContainsFunc(c.commit.Insert, func(d engine.Doc) bool { return touched[d.ID] }) {
			break
		}
		run.Insert = append(run.Insert, c.commit.Insert...)
		run.Delete = append(run.Delete, c.commit.Delete...)
		for _, d := range c.commit.Insert {
			touched[d.ID] = true
		}
		for _, id := range c.commit.Delete {
			touched[id] = true
		}
		k++
	}
	return k, run
}

// applyNext applies the command at seq if it is the next one (one
// applied already is skipped). The caller holds applyMu.
func (n *Node) applyNext(ctx context.Context, seq uint64, id string, data []byte) error {
	switch applied := n.db.Applied(); {
	case seq <= applied:
		return nil
	case seq != applied+1:
		return fmt.Errorf("stream %s holds no commands %d to %d (removed by its limits or a purge): this node cannot catch up from the stream alone", n.opts.Stream, applied+1, seq-1)
	}
	return n.apply(ctx, seq, id, data)
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
		r = n.decide(ctx, c)
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
	n.answer(id, r)
	return nil
}

// answer tells the caller waiting for the command published with message
// id, if it waits on this node, what applying it gave, and wakes those
// waiting for the node to move.
func (n *Node) answer(id string, r result) {
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
}

// decide is an insert-if-new command's decision against the index as it
// stands (every node decides it at the same place in the stream): the
// documents that keep it out, or inserted; or a setting kept.
func (n *Node) decide(ctx context.Context, c command) result {
	if c.setting != nil {
		return result{err: api.KeepSetting(ctx, n.db, c.setting.name, c.setting.value)}
	}
	if !c.ifNew {
		return result{}
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
