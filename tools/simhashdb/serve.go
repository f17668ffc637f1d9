package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/replica"
	"github.com/simhashdb/simhashdb/server"
)

// serveFlags are serve's limits and addresses.
type serveFlags struct {
	addr, tokenFile, tlsCert, tlsKey          string
	maxBody, maxBatchBody, maxInflight        byteSize
	maxBatch, maxHeader                       int
	readHeader, read, write, idle, shutdownTO time.Duration
	nats, stream, snapshotFrom                string
	streamReplicas                            int
	streamKeepFor                             time.Duration
	shard                                     shardFlag
}

func (s *serveFlags) register(fl *flag.FlagSet) {
	fl.StringVar(&s.addr, "addr", "127.0.0.1:7700", "address to listen on; port 0 picks a free one (the log line says which)")
	fl.StringVar(&s.tokenFile, "token-file", "", "a file holding the bearer token every endpoint but /healthz requires; without one, only loopback addresses are served")
	fl.StringVar(&s.tlsCert, "tls-cert", "", "TLS certificate file (with --tls-key): serve HTTPS")
	fl.StringVar(&s.tlsKey, "tls-key", "", "TLS key file")
	s.maxBody, s.maxBatchBody, s.maxInflight = server.DefaultMaxBody, server.DefaultMaxBatchBody, server.DefaultMaxInflight
	fl.Var(&s.maxBody, "max-body", "the largest request body in bytes (units allowed: 1MiB)")
	fl.Var(&s.maxBatchBody, "max-batch-body", "the largest body of POST /v1/documents and /v1/batch, in bytes")
	fl.IntVar(&s.maxBatch, "max-batch", server.DefaultMaxBatch, "the most lines in one POST /v1/documents or /v1/batch")
	fl.Var(&s.maxInflight, "max-inflight-bytes", "the most bytes of batch bodies read at once (others wait); part of the server's memory bound")
	fl.IntVar(&s.maxHeader, "max-header-bytes", server.DefaultMaxHeader, "the largest request header in bytes")
	fl.DurationVar(&s.readHeader, "read-header-timeout", 5*time.Second, "time to read a request's headers")
	fl.DurationVar(&s.read, "read-timeout", time.Minute, "time to read a whole request")
	fl.DurationVar(&s.write, "write-timeout", 10*time.Minute, "time to write an answer (a batch streams within it)")
	fl.DurationVar(&s.idle, "idle-timeout", 2*time.Minute, "time a kept-alive connection may wait for its next request")
	fl.DurationVar(&s.shutdownTO, "shutdown-timeout", 30*time.Second, "on SIGTERM or SIGINT, time for the requests in flight to finish")
	fl.StringVar(&s.nats, "nats", "", "NATS servers (nats://host:port, comma separated): serve as a node of a replicated index whose log is a JetStream stream; every node of the index names the same stream, and writes through any node reach every node")
	fl.StringVar(&s.stream, "stream", "simhashdb", "with --nats: the stream that is the index's log")
	fl.StringVar(&s.snapshotFrom, "snapshot-from", "", "with --nats, when --db holds no index yet: start from a snapshot of the node serving at this URL (GET /v1/snapshot; --token-file's token) and apply the stream after it, instead of the whole stream")
	fl.DurationVar(&s.streamKeepFor, "stream-keep-for", replica.DefaultKeepFor, "with --nats: how long the stream keeps each command when this node creates it (0: for ever); a node away longer, or a new one, starts from a peer's snapshot (--snapshot-from)")
	fl.Var(&s.shard, "shard", "with --nats: serve as a node of shard I of N (I/N, from 0/N) in a log that N shards share, each holding the documents its ids place there (clients give each shard's nodes as one --server, in shard order); insert-if-new is then decided over every shard. Every node of every shard names the same --stream and N")
	fl.IntVar(&s.streamReplicas, "stream-replicas", 1, "with --nats: the stream's replicas when this node creates it (3 on a cluster of three NATS servers keeps it through the loss of one)")
}

// check validates the flags and returns the token.
func (s *serveFlags) check() (string, error) {
	if (s.tlsCert == "") != (s.tlsKey == "") {
		return "", errors.New("--tls-cert and --tls-key go together")
	}
	for _, l := range []struct {
		name string
		v    int64
	}{{"--max-body", int64(s.maxBody)}, {"--max-batch-body", int64(s.maxBatchBody)}, {"--max-batch", int64(s.maxBatch)},
		{"--max-inflight-bytes", int64(s.maxInflight)}, {"--max-header-bytes", int64(s.maxHeader)}} {
		if l.v <= 0 {
			return "", fmt.Errorf("%s %d: want a positive limit", l.name, l.v)
		}
	}
	token := ""
	if s.tokenFile != "" {
		b, err := os.ReadFile(s.tokenFile)
		if err != nil {
			return "", fmt.Errorf("--token-file %s: %w", s.tokenFile, unwrapPathError(err))
		}
		if token = strings.TrimSpace(string(b)); token == "" || strings.ContainsAny(token, " \t\r\n") {
			return "", fmt.Errorf("--token-file %s: want one token, without spaces", s.tokenFile)
		}
	}
	host, _, err := net.SplitHostPort(s.addr)
	if err != nil {
		return "", fmt.Errorf("--addr %s: %w", s.addr, err)
	}
	if token == "" && !loopback(host) {
		return "", fmt.Errorf("--addr %s: without --token-file only a loopback address (127.0.0.1, ::1, localhost) is served", s.addr)
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
	if s.maxInflight < s.maxBatchBody {
		return "", fmt.Errorf("--max-inflight-bytes %d is below --max-batch-body %d: no batch could be read", s.maxInflight, s.maxBatchBody)
	}
	return token, nil
}

// plainTokenWarning is the warning for a token sent in clear over the
// network, or "" when the address is loopback or the server speaks TLS.
func (s *serveFlags) plainTokenWarning(token string) string {
	host, _, _ := net.SplitHostPort(s.addr)
	if token == "" || s.tlsCert != "" || loopback(host) {
		return ""
	}
	return fmt.Sprintf("warning: serving %s without TLS: the bearer token crosses the network in clear; give --tls-cert and --tls-key, or serve on loopback behind a TLS proxy", s.addr)
}

// loopback reports whether host names only this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if fl.NArg() > 0 {
		return fail(stderr, "serve", exitUsage, fmt.Errorf("unexpected arguments %q", fl.Args()))
	}
	if err := d.check(fl); err != nil {
		return fail(stderr, "serve", exitUsage, err)
	}
	token, err := sf.check()
	if err != nil {
		return fail(stderr, "serve", exitUsage, err)
	}
	opts, err := cf.options(&d)
	if err != nil {
		return fail(stderr, "serve", exitUsage, err)
	}
	if *sketches {
		var code int
		if opts, code, err = textOptions(opts, &d, &cf, &ff, fl, true); err != nil {
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
	db, code, err := cf.open(ctx, &d, opts, &ff, fl)
	if err != nil {
		return fail(stderr, "serve", code, err)
	}
	code = serve(ctx, db, &d, &ff, &sf, token, stderr)
	if err := db.Flush(context.Background()); err != nil && code == exitOK {
		code = fail(stderr, "serve", exitFailed, err)
	}
	if err := db.Close(); err != nil && code == exitOK {
		code = fail(stderr, "serve", exitFailed, err)
	}
	if code == exitOK {
		fmt.Fprintf(stderr, "%s serve: stopped; every acknowledged write is in the index\n", programName)
	}
	return code
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
	opts := server.Options{Token: token, MaxBody: int64(sf.maxBody), MaxBatchBody: int64(sf.maxBatchBody),
		MaxBatch: sf.maxBatch, MaxInflight: int64(sf.maxInflight), MaxWait: sf.read / 2, MaxHeader: sf.maxHeader, Fingerprinter: f, TextReading: reading, Logger: quietLogger()}
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
	srv := &http.Server{Handler: h, ReadHeaderTimeout: sf.readHeader, ReadTimeout: sf.read, WriteTimeout: sf.write,
		// Well above the server's own limit, which answers 431 in JSON (a
		// header over this one gets Go's plain-text 431).
		IdleTimeout: sf.idle, MaxHeaderBytes: max(2*sf.maxHeader, 1<<20)}
	// gRPC clients speak HTTP/2, without TLS too (h2c, prior knowledge).
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	scheme := "http"
	if sf.tlsCert != "" {
		scheme = "https"
	}
	auth := "no token: loopback only"
	if token != "" {
		auth = "bearer token required"
	}
	defer holdMemory(ctx, db, int64(sf.maxInflight), stderr)()
	fmt.Fprintf(stderr, "%s serve: listening on %s://%s (index %s, K = %d, %s)\n", programName, scheme, listenedOn(sf.addr, ln.Addr()), d.dir, db.K(), auth)
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
	done := make(chan error, 1)
	go func() {
		if sf.tlsCert != "" {
			done <- srv.ServeTLS(ln, sf.tlsCert, sf.tlsKey)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return fail(stderr, "serve", exitFailed, err)
	case <-ctx.Done():
	}
	fmt.Fprintf(stderr, "%s serve: stopping: finishing the requests in flight\n", programName)
	sctx, cancel := context.WithTimeout(context.Background(), sf.shutdownTO)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fail(stderr, "serve", exitFailed, fmt.Errorf("shutting down: %w", err))
	}
	return exitOK
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
