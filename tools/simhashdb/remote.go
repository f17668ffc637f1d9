package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/client"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
	"github.com/simhashdb/simhashdb/textindex/naming"
)

// remoteFlags send a command to a running "simhashdb serve" instead of
// opening the index: one --server, or one a shard of an index split over
// several (client.Sharded).
type remoteFlags struct {
	servers   serverList
	tokenFile string
	tokenFlag string // the flag that named tokenFile, for messages ("": --token-file)
}

// serverList is the --server flags, in the order given.
type serverList []string

func (l *serverList) String() string { return strings.Join(*l, " ") }

func (l *serverList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func (rf *remoteFlags) register(fl *flag.FlagSet) {
	fl.Var(&rf.servers, "server", "talk to a running 'simhashdb serve' at this URL instead of opening --db (the nodes of a replicated index: comma separated; an index split in shards: --server once a shard, every time in the same order)")
	fl.StringVar(&rf.tokenFile, "token-file", "", "with --server: a file holding the server's bearer token")
}

// remote reports whether the command talks to servers.
func (rf *remoteFlags) remote() bool { return len(rf.servers) > 0 }

// String names the servers for messages.
func (rf *remoteFlags) String() string { return rf.servers.String() }

// checkTarget requires --db or --server, not both.
func checkTarget(d *dbFlags, rf *remoteFlags, fl *flag.FlagSet) error {
	if !rf.remote() {
		if rf.tokenFile != "" {
			return errors.New("--token-file goes with --server")
		}
		return d.check(fl)
	}
	if d.dir != "" {
		return errors.New("give --db or --server, not both")
	}
	for _, s := range rf.servers {
		if _, err := client.New(s, client.Options{}); err != nil {
			return fmt.Errorf("--server %s: want http://HOST:PORT or https://HOST:PORT, or a replicated index's nodes comma separated", quoteShort(s))
		}
	}
	if len(rf.servers) > 1 {
		if _, err := client.NewSharded(rf.servers, client.Options{}); err != nil {
			return fmt.Errorf("--server once a shard: %w", err)
		}
	}
	d.dir = "-" // d.check wants --db; the server has it
	defer func() { d.dir = "" }()
	return d.check(fl)
}

// servedIndex is an index a command reaches through servers: one
// (*client.Client) or split in shards (*client.Sharded).
type servedIndex interface {
	api.Index
	api.Verifier
	naming.Index
	QueryText(ctx context.Context, text string, k int, similarity *float64) (uint64, []textindex.Match, error)
}

// openIndex opens what a command works on: the index in --db, with opts,
// or the one served at --server, through package client. A command
// written against api.Index prints the same either way.
func openIndex(d *dbFlags, rf *remoteFlags, opts engine.Options) (api.Index, func() error, error) {
	if !rf.remote() {
		db, err := d.open(opts, false)
		if err != nil {
			return nil, nil, err
		}
		return api.Embedded{DB: db}, db.Close, nil
	}
	c, err := rf.dial()
	if err != nil {
		return nil, nil, err
	}
	return c, func() error { return nil }, nil
}

// openSettings opens what a command reads an index's text options from:
// the index in --db, read-only, or the one served at --server, and the
// size of its sketches.
func openSettings(ctx context.Context, d *dbFlags, rf *remoteFlags) (_ textindex.Settings, sketchSize int, closeIx func() error, _ error) {
	ix, closeIx, err := openIndex(d, rf, engine.Options{ReadOnly: true})
	if err != nil {
		return nil, 0, nil, err
	}
	st, err := ix.Stats(ctx)
	if err != nil && !errors.As(err, new(*engine.StatsError)) {
		closeIx()
		return nil, 0, nil, err
	}
	settings, ok := ix.(textindex.Settings)
	if !ok { // every api.Index this command opens keeps settings
		closeIx()
		return nil, 0, nil, fmt.Errorf("%T keeps no settings", ix)
	}
	return settings, st.SketchSize, closeIx, nil
}

// dial returns a client of the index at --server: of its shards, when
// more than one is given.
func (rf *remoteFlags) dial() (servedIndex, error) {
	if len(rf.servers) > 1 {
		return rf.dialShards()
	}
	token, err := rf.token()
	if err != nil {
		return nil, err
	}
	return client.New(rf.servers[0], client.Options{Token: token, Timeout: remoteTimeout})
}

// dialShards is a client of the shards of --server, one or more.
func (rf *remoteFlags) dialShards() (*client.Sharded, error) {
	token, err := rf.token()
	if err != nil {
		return nil, err
	}
	return client.NewSharded(rf.servers, client.Options{Token: token, Timeout: remoteTimeout})
}

// remoteTimeout bounds a call to the server that is not a stream.
const remoteTimeout = 10 * time.Minute

// token reads --token-file, if given.
func (rf *remoteFlags) token() (string, error) {
	if rf.tokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(rf.tokenFile)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", cmp.Or(rf.tokenFlag, "--token-file"), rf.tokenFile, unwrapPathError(err))
	}
	return strings.TrimSpace(string(b)), nil
}
