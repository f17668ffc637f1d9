package main

import (
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
	"github.com/simhashdb/simhashdb/sketch"
	"github.com/simhashdb/simhashdb/textindex"
)

// remoteFlags send a command to a running "simhashdb serve" instead of
// opening the index.
type remoteFlags struct {
	server, tokenFile string
}

func (rf *remoteFlags) register(fl *flag.FlagSet) {
	fl.StringVar(&rf.server, "server", "", "talk to a running 'simhashdb serve' at this URL instead of opening --db (the nodes of a replicated index: comma separated)")
	fl.StringVar(&rf.tokenFile, "token-file", "", "with --server: a file holding the server's bearer token")
}

// checkTarget requires --db or --server, not both.
func checkTarget(d *dbFlags, rf *remoteFlags, fl *flag.FlagSet) error {
	if rf.server == "" {
		if rf.tokenFile != "" {
			return errors.New("--token-file goes with --server")
		}
		return d.check(fl)
	}
	if d.dir != "" {
		return errors.New("give --db or --server, not both")
	}
	if _, err := client.New(rf.server, client.Options{}); err != nil {
		return fmt.Errorf("--server %s: want http://HOST:PORT or https://HOST:PORT, or a replicated index's nodes comma separated", quoteShort(rf.server))
	}
	d.dir = "-" // d.check wants --db; the server has it
	defer func() { d.dir = "" }()
	return d.check(fl)
}

// openIndex opens what a command works on: the index in --db, with opts,
// or the one served at --server, through package client. A command
// written against api.Index prints the same either way.
func openIndex(d *dbFlags, rf *remoteFlags, opts engine.Options) (api.Index, func() error, error) {
	if rf.server == "" {
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
// the index in --db, read-only, or the one served at --server; sketched
// says whether it keeps sketches.
func openSettings(ctx context.Context, d *dbFlags, rf *remoteFlags) (_ textindex.Settings, sketched bool, closeIx func() error, _ error) {
	ix, closeIx, err := openIndex(d, rf, engine.Options{ReadOnly: true})
	if err != nil {
		return nil, false, nil, err
	}
	st, err := ix.Stats(ctx)
	if err != nil && !errors.As(err, new(*engine.StatsError)) {
		closeIx()
		return nil, false, nil, err
	}
	settings, ok := ix.(textindex.Settings)
	if !ok { // every api.Index this command opens keeps settings
		closeIx()
		return nil, false, nil, fmt.Errorf("%T keeps no settings", ix)
	}
	return settings, st.SketchSize == sketch.Size, closeIx, nil
}

// dial returns a client of the server at --server.
func (rf *remoteFlags) dial() (*client.Client, error) {
	token, err := rf.token()
	if err != nil {
		return nil, err
	}
	return client.New(rf.server, client.Options{Token: token, Timeout: remoteTimeout})
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
		return "", fmt.Errorf("--token-file: %w", unwrapPathError(err))
	}
	return strings.TrimSpace(string(b)), nil
}
