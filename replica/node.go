// Package replica makes several simhashdb indexes one: each node keeps
// its own engine.DB and applies, in order, the commands of one NATS
// JetStream stream (the replicated log, kept on a quorum of NATS servers
// by their Raft), so every node holds the same documents.
//
// A node's writes are published to the stream and answered once the
// stream has them (durable on its replicas) and this node has applied
// them, so a client reads its own writes on the node it wrote through.
// Insert-if-new is a command too: every node decides it at its place in
// the stream, against the same documents, so two crawlers never both
// insert near-duplicates of each other, whichever nodes they use.
// Queries are the node's own index, as fresh as its applying (Lag);
// Latest waits until the node has applied everything the stream held
// when it was called.
//
// A node records the stream sequence of each command it applies with the
// commit (engine.Commit.Position), so after a crash it resumes right
// after engine.DB.Applied and applies each command exactly once.
//
// Shards of an index split by document id may share one stream
// (Options.Shards): each node applies its shard's commands, and an
// insert-if-new is decided over every shard by their votes (votes.go).
package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
)

// Options configure a Node.
type Options struct {
	// URL is the NATS servers to connect to, comma separated
	// ("nats://127.0.0.1:4222,nats://127.0.0.1:4223"); credentials may be
	// in it (nats://user:password@host).
	URL string
	// Stream names the stream that is the index's log (default
	// "simhashdb"). Every node of one index names the same stream.
	Stream string
	// Replicas is the stream's replicas when a node creates it (default
	// 1; 3 on a cluster of three NATS servers keeps the log on a quorum of
	// two through the loss of any one). A stream that exists keeps its own.
	Replicas int
	// KeepFor is how long the stream keeps a command when a node creates
	// it (its MaxAge; default DefaultKeepFor, negative: for ever). A node
	// down longer than that, or a new one, starts from a peer's snapshot
	// (serve --snapshot-from): the commands before it are gone, and a
	// node that finds them so refuses to go on, naming them. A stream
	// that exists keeps its own.
	KeepFor time.Duration
	// Logger receives what the node does not answer a caller with: the
	// stream lost, a command its index refused (nil: none).
	Logger *slog.Logger
	// Shards, when more than one, makes the node one of shard Shard's
	// (0 to Shards-1) in a log that Shards shards share, each a group of
	// nodes holding the documents that api.ShardOf places there. The node
	// applies its shard's writes and takes no other shard's ids; its
	// insert-if-new is decided over every shard: each shard's nodes decide
	// the command at its place in the log against their own documents and
	// publish a vote, and the document's shard inserts it once every vote
	// says no near-duplicate. Every node of every shard names the same
	// Stream and Shards; a stream made for one index is refused.
	Shard, Shards int
}

// DefaultKeepFor is how long a stream a node creates keeps its commands:
// a day of writes on the stream's servers' disks, and a node away for
// less resumes from the stream alone.
const DefaultKeepFor = 24 * time.Hour

// duplicateWindow is how long the stream recognises a command published
// again after a lost acknowledgement (at most KeepFor).
const duplicateWindow = 2 * time.Minute

// Node is one member of a replicated index: its engine.DB, which the
// caller opens and closes and writes to only through the Node.
type Node struct {
	db      *engine.DB
	opts    Options
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	subject string
	cancel  context.CancelFunc
	done    chan struct{}

	applyMu sync.Mutex // one command applied at a time, in the stream's order

	mu      sync.Mutex
	pending map[string]chan result // by message id: the callers waiting for their command
	watch   chan struct{}          // closed, and replaced, when applied moves
	lastErr error                  // why applying stopped last, until it moves again

	lag atomic.Uint64 // the stream's commands after the last one applied, as its delivery said

	// passed is the last command of a shared log that this node went
	// past without writing (another shard's, a vote, or an insert-if-new
	// it voted on); with db.Applied, its place in the stream (position).
	passed atomic.Uint64

	voteMu      sync.Mutex
	voteWaits   map[uint64]chan *nats.Msg // by command: the decisions waiting for votes (onVote)
	recent      map[uint64][]*nats.Msg    // by command: votes no decision waited for yet
	recentBytes int

	publishes    atomic.Uint64 // commands the stream acknowledged to this node
	publishNanos atomic.Int64  // the time their publishes took, in all
}

// result is what applying a command gives its caller.
type result struct {
	matches  []engine.Match
	verified []textindex.Match
	inserted bool
	err      error
}

// ErrTooLarge: a command larger than the stream's servers take in one
// message (their max_payload).
var ErrTooLarge = errors.New("replica: command larger than the stream's messages")

// Start connects db to the stream and starts applying it from the
// command after db.Applied. It creates the stream when it does not exist.
func Start(ctx context.Context, db *engine.DB, opts Options) (*Node, error) {
	if opts.Stream == "" {
		opts.Stream = "simhashdb"
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	if opts.KeepFor == 0 {
		opts.KeepFor = DefaultKeepFor
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Shards <= 1 {
		opts.Shard, opts.Shards = 0, 0
	} else if opts.Shard < 0 || opts.Shard >= opts.Shards {
		return nil, fmt.Errorf("%w: replica: shard %d of %d: shards are numbered 0 to %d", engine.ErrInput, opts.Shard, opts.Shards, opts.Shards-1)
	}
	nc, err := nats.Connect(opts.URL, nats.Name("simhashdb"), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(false))
	if err != nil {
		return nil, fmt.Errorf("replica: connecting to %s: %w", opts.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("replica: %w", err)
	}
	n := &Node{db: db, opts: opts, nc: nc, js: js, subject: streamSubjects(opts.Stream, 0)[0],
		pending: map[string]chan result{}, watch: make(chan struct{}), done: make(chan struct{})}
	if opts.Shards > 1 {
		n.subject = shardSubject(opts.Stream, opts.Shard)
	}
	if n.stream, err = n.openStream(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	if opts.Shards > 1 {
		n.voteWaits, n.recent = map[uint64]chan *nats.Msg{}, map[uint64][]*nats.Msg{}
		if _, err := nc.Subscribe(opts.Stream+".vote.>", n.onVote); err != nil {
			nc.Close()
			return nil, fmt.Errorf("replica: %w", err)
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go n.run(runCtx)
	return n, nil
}

// openStream binds the stream, creating it if no node has.
func (n *Node) openStream(ctx context.Context) (jetstream.Stream, error) {
	cfg := jetstream.StreamConfig{
		Name: n.opts.Stream, Subjects: streamSubjects(n.opts.Stream, n.opts.Shards), Storage: jetstream.FileStorage,
		Replicas: n.opts.Replicas, Duplicates: duplicateWindow, Metadata: streamMetadata(n.opts.Shards),
	}
	if n.opts.KeepFor > 0 {
		cfg.MaxAge = n.opts.KeepFor
		cfg.Duplicates = min(duplicateWindow, n.opts.KeepFor)
	}
	// A cluster just started has no JetStream leader yet: ask again
	// until ctx is done.
	wait := minRetry
	for {
		// One attempt's bound: a server without a leader may not answer.
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		s, err := n.js.Stream(actx, n.opts.Stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			s, err = n.js.CreateStream(actx, cfg)
		}
		cancel()
		switch {
		case err == nil:
			return s, n.checkLayout(s.CachedInfo().Config)
		case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount),
			errors.Is(err, jetstream.ErrInvalidStreamName):
			// Asking again would not change the answer.
			return nil, fmt.Errorf("replica: stream %q: %w", n.opts.Stream, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("replica: stream %s: %w (%w)", n.opts.Stream, err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
	}
}

// attemptTimeout bounds one request to the stream's servers before it is
// made again.
const attemptTimeout = 5 * time.Second

// DB returns the node's index, for reading.
func (n *Node) DB() *engine.DB { return n.db }

// Close stops applying the stream and disconnects; it does not close the
// index.
func (n *Node) Close() error {
	n.cancel()
	<-n.done
	n.nc.Close()
	return nil
}

// Write publishes c (inserts, then deletes; its Position must be 0) and
// returns once the stream holds it and this node has applied it.
func (n *Node) Write(ctx context.Context, c engine.Commit) error {
	if c.Position != 0 {
		return fmt.Errorf("%w: a replicated commit takes its position from the stream", engine.ErrInput)
	}
	if len(c.Insert)+len(c.Delete) == 0 {
		return nil
	}
	for _, d := range c.Insert {
		if err := n.checkShard(d.ID); err != nil {
			return err
		}
	}
	for _, id := range c.Delete {
		if err := n.checkShard(id); err != nil {
			return err
		}
	}
	return n.do(ctx, command{commit: c}).err
}

// InsertIfNew stores d unless a document within k of it is stored when
// the stream reaches the command, and returns those that are.
func (n *Node) InsertIfNew(ctx context.Context, d engine.Doc, k int) ([]engine.Match, bool, error) {
	if err := n.checkShard(d.ID); err != nil {
		return nil, false, err
	}
	r := n.do(ctx, command{commit: engine.Commit{Insert: []engine.Doc{d}}, ifNew: true, k: k, shards: n.opts.Shards})
	return r.matches, r.inserted, r.err
}

// InsertIfNewSimilar is InsertIfNew in an index of text: a stored
// document counts when its sketch's estimated similarity to d's is at
// least similarity (textindex.InsertIfNew).
func (n *Node) InsertIfNewSimilar(ctx context.Context, d engine.Doc, k int, similarity float64) ([]textindex.Match, bool, error) {
	if err := n.checkShard(d.ID); err != nil {
		return nil, false, err
	}
	r := n.do(ctx, command{commit: engine.Commit{Insert: []engine.Doc{d}}, ifNew: true, k: k, similarity: &similarity, shards: n.opts.Shards})
	return r.verified, r.inserted, r.err
}

// SetSetting keeps a setting on every node unless the index keeps it
// already (api.KeepSetting: the same value is left, another refused).
func (n *Node) SetSetting(ctx context.Context, name string, value []byte) error {
	return n.do(ctx, command{setting: &setting{name: name, value: value}}).err
}

// do publishes c and waits for this node to apply it.
func (n *Node) do(ctx context.Context, c command) result {
	b, err := encodeCommand(c)
	if err != nil {
		return result{err: err}
	}
	if max := n.nc.MaxPayload(); int64(len(b)) > max {
		return result{err: fmt.Errorf("%w (%w): %d bytes, the servers take at most %d (max_payload): send fewer documents at a time", ErrTooLarge, engine.ErrInput, len(b), max)}
	}
	id := nuid.Next()
	ch := make(chan result, 1)
	n.mu.Lock()
	n.pending[id] = ch
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.pending, id)
		n.mu.Unlock()
	}()
	// The message id makes a publish retried after a lost
	// acknowledgement one command: the stream keeps the first.
	subject := n.subject
	if c.ifNew && c.shards > 1 {
		subject = ifNewSubject(n.opts.Stream)
	}
	start := time.Now()
	ack, err := n.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: b}, jetstream.WithMsgID(id), jetstream.WithExpectStream(n.opts.Stream))
	if err != nil {
		return result{err: fmt.Errorf("%w: replica: publishing to stream %s: %w", api.ErrUnavailable, n.opts.Stream, err)}
	}
	n.publishNanos.Add(int64(time.Since(start)))
	n.publishes.Add(1)
	for {
		n.mu.Lock()
		watch := n.watch
		n.mu.Unlock()
		// The stream acknowledged the command at ack.Sequence with this
		// node's bytes (a duplicate: the same bytes, published before):
		// when it is the next to apply, apply it now rather than wait for
		// the stream to deliver it back.
		if n.position()+1 == ack.Sequence && n.applyMu.TryLock() {
			_ = n.applyNext(ctx, ack.Sequence, subject, id, b) // a failure: the stream delivers it again
			n.applyMu.Unlock()
		}
		n.mu.Lock()
		stopped := n.lastErr
		n.mu.Unlock()
		if stopped != nil && n.position() < ack.Sequence {
			return result{err: fmt.Errorf("%w: replica: command %d is in the stream; this node stopped applying it at %d: %w", api.ErrUnavailable, ack.Sequence, n.position(), stopped)}
		}
		select {
		case r := <-ch:
			return r
		case <-watch:
		case <-ctx.Done():
			return result{err: fmt.Errorf("replica: command %d is in the stream, not yet applied by this node (applied %d): %w", ack.Sequence, n.position(), ctx.Err())}
		}
	}
}

// Latest returns once this node has applied every command the stream
// held when it was called: a query after it sees every write acknowledged
// before Latest began, by any node.
func (n *Node) Latest(ctx context.Context) error {
	info, err := n.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("%w: replica: asking stream %s for its last command: %w", api.ErrUnavailable, n.opts.Stream, err)
	}
	return n.waitApplied(ctx, info.State.LastSeq)
}

// waitApplied returns once the node has applied the command at seq, or
// an error when applying the stream has stopped.
func (n *Node) waitApplied(ctx context.Context, seq uint64) error {
	for {
		n.mu.Lock()
		watch, lastErr := n.watch, n.lastErr
		n.mu.Unlock()
		applied := n.position()
		switch {
		case applied >= seq:
			return nil
		case lastErr != nil:
			return fmt.Errorf("%w: replica: this node applied the stream up to command %d of %d, and stopped: %w", api.ErrUnavailable, applied, seq, lastErr)
		}
		select {
		case <-watch:
		case <-ctx.Done():
			return fmt.Errorf("replica: waiting for command %d, applied %d: %w", seq, applied, ctx.Err())
		}
	}
}

// Lag returns how many of the stream's commands this node had yet to
// apply when it applied its last one: how stale its answers are.
func (n *Node) Lag() uint64 { return n.lag.Load() }

// Publishes returns how many commands this node published that the
// stream acknowledged, and the time their publishes took in all: the
// quorum's rounds as this node's writes wait for them.
func (n *Node) Publishes() (count uint64, total time.Duration) {
	return n.publishes.Load(), time.Duration(n.publishNanos.Load())
}

// Sharding returns the node's shard and the count of shards that share
// its log (0, 0: the log is one index's).
func (n *Node) Sharding() (shard, shards int) { return n.opts.Shard, n.opts.Shards }
