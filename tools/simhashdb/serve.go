package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/memlimit"
	"github.com/simhashdb/simhashdb/replica"
	"github.com/simhashdb/simhashdb/server"
	"github.com/simhashdb/simhashdb/textindex"
)

// serveFlags are serve's limits and addresses, and its place in a
// replicated index.
type serveFlags struct {
	listenFlags
	nats, stream, snapshotFrom string
	streamReplicas             int
	streamKeepFor              time.Duration
	shard                      shardFlag
	readOnly                   bool
}

func (s *serveFlags) register(fl *flag.FlagSet) {
	s.listenFlags.register(fl, "127.0.0.1:7700")
	fl.StringVar(&s.nats, "nats", "", "NATS servers (nats://host:port, comma separated): serve as a node of a replicated index whose log is a JetStream stream; every node of the index names the same stream, and writes through any node reach every node")
	fl.StringVar(&s.stream, "stream", "simhashdb", "with --nats: the stream that is the index's log")
	fl.StringVar(&s.snapshotFrom, "snapshot-from", "", "with --nats, when --db holds no index yet: start from a snapshot of the node serving at this URL (GET /v1/snapshot; --token-file's token) and apply the stream after it, instead of the whole stream")
	fl.DurationVar(&s.streamKeepFor, "stream-keep-for", replica.DefaultKeepFor, "with --nats: how long the stream keeps each command when this node creates it (0: for ever); a node away longer, or a new one, starts from a peer's snapshot (--snapshot-from)")
	fl.Var(&s.shard, "shard", "with --nats: serve as a node of shard I of N (I/N, from 0/N) in a log that N shards share, each holding the documents its ids place there (clients give each shard's nodes as one --server, in shard order); insert-if-new is then decided over every shard. Every node of every shard names the same --stream and N")
	fl.BoolVar(&s.readOnly, "read-only", false, "serve an index that exists, without writes (each answers 403: the index is read-only): its files then never change, and a cold query reads its table blocks, and then its matches' postings, each in one submission to the disk (with --reads direct, or by default for an index more than 1.2 times the memory, O_DIRECT), without Pebble's read path")
	fl.IntVar(&s.streamReplicas, "stream-replicas", 1, "with --nats: the stream's replicas when this node creates it (3 on a cluster of three NATS servers keeps it through the loss of one)")
}

// check validates the flags and returns the token.
func (s *serveFlags) check() (string, error) {
	token, err := s.listenFlags.check()
	if err != nil {
		return "", err
	}
	if s.readOnly && (s.nats != "" || s.snapshotFrom != "") {
		return "", errors.New("--read-only serves an index as it is: a node of a replicated index (--nats, --snapshot-from) applies the log's writes")
	}
	if s.snapshotFrom != "" && s.nats == "" {
		return "", errors.New("--snapshot-from goes with --nats")
	}
	if s.shard.n > 0 && s.nats == "" {
		return "", errors.New("--shard goes with --nats: the shards' nodes share the stream's log")
	}
	if s.streamKeepFor < 0 || s.streamKeepFor > 0 && s.streamKeepFor < time.Second {
		return "", fmt.Errorf("--stream-keep-for %v: want 0 (for ever) or a second or more", s.streamKeepFor)
	}
	if s.streamReplicas < 1 || s.streamReplicas > 5 {
		return "", fmt.Errorf("--stream-replicas %d: JetStream keeps 1 to 5 replicas", s.streamReplicas)
	}
	return token, nil
}

func runServe(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("serve", "--db DIR [--addr HOST:PORT] [--token-file FILE] [--tls-cert F --tls-key F] [flags]",
		"  simhashdb serve --db idx --addr 127.0.0.1:7700\n"+
			"  curl -s 'http://127.0.0.1:7700/v1/query?fp=0x0123456789abcdef&k=3'\n\n"+
			"Serves the index (created if absent, with add's flags) over HTTP with JSON; see the\n"+
			"server package's documentation and docs/server.md for the endpoints. SIGTERM or SIGINT\n"+
			"stops accepting, lets the requests in flight finish, flushes and closes the index.", stderr)
	var d dbFlags
	d.register(fl, "the largest distance the index answers, fixed at creation (default 3)")
	var cf createFlags
	cf.register(fl)
	var ff fingerprintFlags
	ff.register(fl)
	var sf serveFlags
	sf.register(fl)
	sketches := fl.Bool("sketches", false, "create the index as add --text does: a sketch of each document's text kept beside its fingerprint, single words fingerprinted, built for distance 6 (unless --shingle or --k say otherwise); documents then come as text (or with their sketch), and answers about text carry their similarity")
	minSimilarity := fl.Float64("min-similarity", textindex.DefaultSimilarity, "with --sketches, into a new index: the lowest similarity it will be asked for, 0.5 to 1 (as add's)")
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if fl.NArg() > 0 {
		return fail(stderr, "serve", exitUsage, fmt.Errorf("unexpected arguments %q", fl.Args()))
	}
	if flagGiven(fl, "min-similarity") && !*sketches {
		return fail(stderr, "serve", exitUsage, errors.New("--min-similarity goes with --sketches"))
	}
	if err := d.check(fl); err != nil {
		return fail(stderr, "serve", exitUsage, err)
	}
	limit := memlimit.Of("") // before the index opens and its hold lowers the runtime's limit
	sf.fitInflight(fl, limit)
	token, err := sf.check()
	if err != nil {
		return fail(stderr, "serve", exitUsage, err)
	}
	opts, err := cf.options(&d)
	if err != nil {
		return fail(stderr, "serve", exitUsage, err)
	}
	opts.MemoryLimit = indexMemory(limit, int64(sf.maxInflight))
	if *sketches {
		var code int
		if opts, code, err = textOptions(opts, &d, &cf, &ff, fl, true, *minSimilarity); err != nil {
			return fail(stderr, "serve", code, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if sf.snapshotFrom != "" {
		started, applied, err := startFromSnapshot(ctx, sf.snapshotFrom, token, d.dir)
		if err != nil {
			return fail(stderr, "serve", exitFailed, err)
		}
		if started {
			fmt.Fprintf(stderr, "%s serve: started from the snapshot of %s, at command %d\n", programName, sf.snapshotFrom, applied)
		}
	}
	if sf.readOnly {
		if opts, err = readOnlyOptions(opts, fl); err != nil {
			return fail(stderr, "serve", exitUsage, err)
		}
	}
	db, code, err := cf.open(ctx, &d, opts, &ff, fl)
	if err != nil {
		return fail(stderr, "serve", code, err)
	}
	code = serve(ctx, db, &d, &ff, &sf, token, stderr)
	if !sf.readOnly {
		if err := db.Flush(context.Background()); err != nil && code == exitOK {
			code = fail(stderr, "serve", exitFailed, err)
		}
	}
	if err := db.Close(); err != nil && code == exitOK {
		code = fail(stderr, "serve", exitFailed, err)
	}
	switch {
	case code == exitOK && sf.readOnly:
		fmt.Fprintf(stderr, "%s serve: stopped\n", programName)
	case code == exitOK:
		fmt.Fprintf(stderr, "%s serve: stopped; every acknowledged write is in the index\n", programName)
	}
	return code
}

// readOnlyOptions are opts for serve --read-only, which serves an index as
// it is: a flag that would create or write one is refused.
func readOnlyOptions(opts engine.Options, fl *flag.FlagSet) (engine.Options, error) {
	for _, name := range []string{"sketches", "expect", "design", "sync", "memtable-size"} {
		if flagGiven(fl, name) {
			return opts, fmt.Errorf("--%s is for an index that is written: --read-only serves one as it is", name)
		}
	}
	opts.ReadOnly = true
	return opts, nil
}

// serve runs the server on db until ctx is done, then shuts it down.
func serve(ctx context.Context, db *engine.DB, d *dbFlags, ff *fingerprintFlags, sf *serveFlags, token string, stderr io.Writer) int {
	f, err := ff.fingerprinter()
	if err != nil {
		return fail(stderr, "serve", exitUsage, err)
	}
	reading, err := ff.reading()
	if err != nil {
		return fail(stderr, "serve", exitUsage, err)
	}
	opts := sf.options(token)
	opts.Fingerprinter, opts.TextReading = f, reading
	if sf.nats != "" {
		// A cluster of NATS servers just started elects its JetStream
		// leader first: Start waits for it, up to a bound.
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		node, err := replica.Start(sctx, db, replica.Options{URL: sf.nats, Stream: sf.stream, Replicas: sf.streamReplicas, KeepFor: keepFor(sf.streamKeepFor), Shard: sf.shard.i, Shards: sf.shard.n, Logger: quietLogger()})
		cancel()
		if err != nil {
			return fail(stderr, "serve", exitFailed, err)
		}
		defer node.Close()
		opts.Writes = node
		of := ""
		if sf.shard.n > 0 {
			of = fmt.Sprintf(" (shard %s)", &sf.shard)
		}
		fmt.Fprintf(stderr, "%s serve: a node of stream %s%s at %s, applied up to command %d\n", programName, sf.stream, of, sf.nats, db.Applied())
	}
	h := server.New(db, opts)
	if w := sf.plainTokenWarning(token); w != "" {
		fmt.Fprintf(stderr, "%s serve: %s\n", programName, w)
	}
	ln, err := net.Listen("tcp", sf.addr)
	if err != nil {
		return fail(stderr, "serve", exitFailed, err)
	}
	defer holdMemory(db, int64(sf.maxInflight), stderr)()
	ro := ""
	if sf.readOnly {
		ro = ", read-only"
	}
	fmt.Fprintf(stderr, "%s serve: listening on %s://%s (index %s%s, K = %d, %s)\n", programName, sf.scheme(), listenedOn(sf.addr, ln.Addr()), d.dir, ro, db.K(), authNote(token))
	// Warm the cache meanwhile: the first queries then find their blocks
	// decoded. Stopped and waited for before the index closes.
	wctx, stopWarm := context.WithCancel(ctx)
	warmed := make(chan struct{})
	defer func() { stopWarm(); <-warmed }()
	go func() {
		defer close(warmed)
		if err := db.Warm(wctx); err != nil && wctx.Err() == nil {
			fmt.Fprintf(stderr, "%s serve: warming the cache: %v\n", programName, err)
		}
	}()
	return sf.run(ctx, "serve", h, ln, stderr)
}

// listenedOn is the address to print for a listener asked for at asked:
// the host as the user wrote it (Go reports 0.0.0.0 as [::]) with the
// port it got (port 0 picks one).
func listenedOn(asked string, got net.Addr) string {
	host, _, err := net.SplitHostPort(asked)
	tcp, ok := got.(*net.TCPAddr)
	if err != nil || host == "" || !ok {
		return got.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// keepFor is --stream-keep-for as replica.Options takes it: 0 is for ever.
func keepFor(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// shardFlag is --shard I/N: shard I (from 0) of N.
type shardFlag struct{ i, n int }

func (f *shardFlag) String() string {
	if f.n == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", f.i, f.n)
}

func (f *shardFlag) Set(v string) error {
	is, ns, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return fmt.Errorf("%q: want I/N, shard I (from 0) of N", v)
	case n < 2 || n > maxShards:
		return fmt.Errorf("%q: want 2 to %d shards", v, maxShards)
	case i < 0 || i >= n:
		return fmt.Errorf("%q: shards of %d are numbered 0 to %d", v, n, n-1)
	}
	f.i, f.n = i, n
	return nil
}

// maxShards bounds N: each insert-if-new waits for a vote of every shard.
const maxShards = 1024
