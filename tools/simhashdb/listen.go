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
	"strings"
	"time"

	"github.com/simhashdb/simhashdb/server"
)

// listenFlags are the address, token, TLS, limits and timeouts of a
// command that serves the API: serve, and route in front of shards.
type listenFlags struct {
	addr, tokenFile, tlsCert, tlsKey          string
	maxBody, maxBatchBody, maxInflight        byteSize
	maxBatch, maxHeader                       int
	readHeader, read, write, idle, shutdownTO time.Duration
}

// register adds the flags to fl, listening on addr unless told.
func (s *listenFlags) register(fl *flag.FlagSet, addr string) {
	fl.StringVar(&s.addr, "addr", addr, "address to listen on; port 0 picks a free one (the log line says which)")
	fl.StringVar(&s.tokenFile, "token-file", "", "a file holding the bearer token every endpoint but /healthz requires; without one, only loopback addresses are served")
	fl.StringVar(&s.tlsCert, "tls-cert", "", "TLS certificate file (with --tls-key): serve HTTPS")
	fl.StringVar(&s.tlsKey, "tls-key", "", "TLS key file")
	s.maxBody, s.maxBatchBody, s.maxInflight = server.DefaultMaxBody, server.DefaultMaxBatchBody, server.DefaultMaxInflight
	fl.Var(&s.maxBody, "max-body", "the largest request body in bytes (units allowed: 1MiB)")
	fl.Var(&s.maxBatchBody, "max-batch-body", "the largest body of POST /v1/documents and /v1/batch, in bytes")
	fl.IntVar(&s.maxBatch, "max-batch", server.DefaultMaxBatch, "the most lines in one POST /v1/documents or /v1/batch")
	fl.Var(&s.maxInflight, "max-inflight-bytes", "the most bytes of batch bodies read at once (others wait); part of the server's memory bound; by default no more than an eighth of the memory the process may use, nor less than --max-batch-body")
	fl.IntVar(&s.maxHeader, "max-header-bytes", server.DefaultMaxHeader, "the largest request header in bytes")
	fl.DurationVar(&s.readHeader, "read-header-timeout", 5*time.Second, "time to read a request's headers")
	fl.DurationVar(&s.read, "read-timeout", time.Minute, "time to read a whole request")
	fl.DurationVar(&s.write, "write-timeout", 10*time.Minute, "time to write an answer (a batch streams within it)")
	fl.DurationVar(&s.idle, "idle-timeout", 2*time.Minute, "time a kept-alive connection may wait for its next request")
	fl.DurationVar(&s.shutdownTO, "shutdown-timeout", 30*time.Second, "on SIGTERM or SIGINT, time for the requests in flight to finish")
}

// inflightShare is the part of the memory the process may use that the
// default --max-inflight-bytes takes at most.
const inflightShare = 8

// fitInflight lowers the default --max-inflight-bytes to an eighth of
// limit, the memory the process may use (0: unknown), where that is less,
// and to no less than --max-batch-body: in a small container the default
// would admit bodies of half its memory. A value given is kept.
func (s *listenFlags) fitInflight(fl *flag.FlagSet, limit int64) {
	if flagGiven(fl, "max-inflight-bytes") || limit <= 0 {
		return
	}
	s.maxInflight = min(s.maxInflight, max(s.maxBatchBody, byteSize(limit/inflightShare)))
}

// check validates the flags and returns the token.
func (s *listenFlags) check() (string, error) {
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
	if s.maxInflight < s.maxBatchBody {
		return "", fmt.Errorf("--max-inflight-bytes %d is below --max-batch-body %d: no batch could be read", s.maxInflight, s.maxBatchBody)
	}
	return token, nil
}

// plainTokenWarning is the warning for a token sent in clear over the
// network, or "" when the address is loopback or the server speaks TLS.
func (s *listenFlags) plainTokenWarning(token string) string {
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

// options are the server's limits with token.
func (s *listenFlags) options(token string) server.Options {
	return server.Options{Token: token, MaxBody: int64(s.maxBody), MaxBatchBody: int64(s.maxBatchBody),
		MaxBatch: s.maxBatch, MaxInflight: int64(s.maxInflight), MaxWait: s.read / 2, MaxHeader: s.maxHeader, Logger: quietLogger()}
}

// authNote says in the listening line whether token is required.
func authNote(token string) string {
	if token == "" {
		return "no token: loopback only"
	}
	return "bearer token required"
}

// scheme is the scheme the server is reached by.
func (s *listenFlags) scheme() string {
	if s.tlsCert != "" {
		return "https"
	}
	return "http"
}

// run serves h on ln until ctx is done, then lets the requests in flight
// finish (--shutdown-timeout); command names the messages.
func (s *listenFlags) run(ctx context.Context, command string, h http.Handler, ln net.Listener, stderr io.Writer) int {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: s.readHeader, ReadTimeout: s.read, WriteTimeout: s.write,
		// Well above the server's own limit, which answers 431 in JSON (a
		// header over this one gets Go's plain-text 431).
		IdleTimeout: s.idle, MaxHeaderBytes: max(2*s.maxHeader, 1<<20)}
	// gRPC clients speak HTTP/2, without TLS too (h2c, prior knowledge).
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	done := make(chan error, 1)
	go func() {
		if s.tlsCert != "" {
			done <- srv.ServeTLS(ln, s.tlsCert, s.tlsKey)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return fail(stderr, command, exitFailed, err)
	case <-ctx.Done():
	}
	fmt.Fprintf(stderr, "%s %s: stopping: finishing the requests in flight\n", programName, command)
	sctx, cancel := context.WithTimeout(context.Background(), s.shutdownTO)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fail(stderr, command, exitFailed, fmt.Errorf("shutting down: %w", err))
	}
	return exitOK
}
