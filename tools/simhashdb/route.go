package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/signal"
	"syscall"
	"time"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/memlimit"
	"github.com/simhashdb/simhashdb/server"
)

func runRoute(args []string, _ io.Reader, _, stderr io.Writer) int {
	fl := newFlagSet("route", "--server SHARD0 --server SHARD1 ... [--addr HOST:PORT] [--token-file FILE] [--server-token-file FILE] [flags]",
		"  simhashdb route --server http://10.0.0.1:7700,http://10.0.0.2:7700 --server http://10.0.0.3:7700,http://10.0.0.4:7700\n"+
			"  grpcurl -plaintext -d '{\"content\":{\"text\":\"...\"}}' 127.0.0.1:7710 simhashdb.v1.IndexService/Query\n\n"+
			"Serves the API of proto/simhashdb/v1/index.proto (gRPC, gRPC-Web, Connect with JSON or\n"+
			"binary) in front of an index split over shards, each given as one --server (a replicated\n"+
			"shard's nodes comma separated) in the order that places documents: a client in any language\n"+
			"then calls one address as if it were one index. Writes, gets and insert-if-new go to their\n"+
			"document's shard, queries and batches to every shard, merged; pairs and clusters cross shards.\n"+
			"The /v1 JSON endpoints are an index's own server's (serve).", stderr)
	var lf listenFlags
	lf.register(fl, "127.0.0.1:7710")
	var shards serverList
	fl.Var(&shards, "server", "a shard: its server's URL, or a replicated shard's nodes comma separated; once a shard, in the order that places documents (the same order every client gives)")
	shardToken := fl.String("server-token-file", "", "a file holding the shards' bearer token (default: --token-file's)")
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if fl.NArg() > 0 {
		return fail(stderr, "route", exitUsage, fmt.Errorf("unexpected arguments %q", fl.Args()))
	}
	if len(shards) == 0 {
		return fail(stderr, "route", exitUsage, errors.New("--server: give each shard, in the order that places documents"))
	}
	lf.fitInflight(fl, memlimit.Of(""))
	token, err := lf.check()
	if err != nil {
		return fail(stderr, "route", exitUsage, err)
	}
	rf := remoteFlags{servers: shards, tokenFile: *shardToken, tokenFlag: "--server-token-file"}
	if rf.tokenFile == "" {
		rf.tokenFile, rf.tokenFlag = lf.tokenFile, "--token-file"
	}
	sh, err := rf.dialShards()
	if err != nil {
		return fail(stderr, "route", exitUsage, err)
	}
	// The shards asked once at start, so that a wrong address or token,
	// or shards of different settings, show before the first client's
	// call; the router serves either way (a shard may come up later).
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	st, err := sh.Stats(sctx)
	cancel()
	if err != nil && !errors.As(err, new(*engine.StatsError)) {
		fmt.Fprintf(stderr, "%s route: warning: asking the shards for their statistics: %v\n", programName, err)
	} else {
		fmt.Fprintf(stderr, "%s route: %d shards holding %d documents, K = %d\n", programName, len(shards), st.Documents, st.K)
	}
	h := server.NewRouter(sh.Service(), lf.options(token))
	if w := lf.plainTokenWarning(token); w != "" {
		fmt.Fprintf(stderr, "%s route: %s\n", programName, w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", lf.addr)
	if err != nil {
		return fail(stderr, "route", exitFailed, err)
	}
	fmt.Fprintf(stderr, "%s route: listening on %s://%s (%d shards, %s)\n", programName, lf.scheme(), listenedOn(lf.addr, ln.Addr()), len(shards), authNote(token))
	code := lf.run(ctx, "route", h, ln, stderr)
	if code == exitOK {
		fmt.Fprintf(stderr, "%s route: stopped\n", programName)
	}
	return code
}
