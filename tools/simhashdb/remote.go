package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/client"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/sketch"
	"github.com/simhashdb/simhashdb/textindex"
	"github.com/simhashdb/simhashdb/textindex/naming"
)

// remoteFlags send a command to a running "simhashdb serve" instead of
// opening the index.
type remoteFlags struct {
	server, tokenFile string
}

func (rf *remoteFlags) register(fl *flag.FlagSet) {
	fl.StringVar(&rf.server, "server", "", "talk to a running 'simhashdb serve' at this URL instead of opening --db")
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
	u, err := url.Parse(rf.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--server %s: want http://HOST:PORT or https://HOST:PORT", quoteShort(rf.server))
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

// addIndex is what add writes to, through the same calls embedded or
// served.
type addIndex interface {
	api.Index
	api.Verifier
	naming.Index
}

// addTarget is the index add writes to.
type addTarget struct {
	addIndex
	sketchSize int // the bytes of each document's sketch, 0 for none
	// load stores what --bulk gathered: the engine's Load, which builds
	// the tables of an empty index at once, or a served index's
	// InsertBatch.
	load func(context.Context, []engine.Doc) error
}

// embeddedTarget is db as add's target.
func embeddedTarget(db *engine.DB) *addTarget {
	return &addTarget{api.Embedded{DB: db}, db.SketchSize(), db.Load}
}

// openAddTarget opens what add writes to: the index in --db, created with
// opts if absent, or the one served at --server; either way ff become the
// index's text options (withIndex). closeIx flushes and closes an index
// opened here. On failure it returns the exit code to stop with.
func openAddTarget(ctx context.Context, d *dbFlags, rf *remoteFlags, cf *createFlags, opts engine.Options, ff *fingerprintFlags, fl *flag.FlagSet, stderr io.Writer) (_ *addTarget, closeIx func(interrupted bool) error, code int, _ error) {
	if rf.server == "" {
		db, code, err := cf.open(ctx, d, opts, ff, fl)
		if err != nil {
			return nil, nil, code, err
		}
		closeIx = func(interrupted bool) error {
			if interrupted {
				fmt.Fprintf(stderr, "%s add: closing %s: what is stored goes to its tables; other commands find it in use until this one exits\n", programName, d.dir)
			}
			return errors.Join(db.Flush(context.Background()), db.Close())
		}
		return embeddedTarget(db), closeIx, exitOK, nil
	}
	c, err := rf.dial()
	if err != nil {
		return nil, nil, exitUsage, err
	}
	st, err := c.Stats(ctx)
	if err != nil && !errors.As(err, new(*engine.StatsError)) {
		return nil, nil, exitFailed, err
	}
	if err := ff.withIndex(ctx, c, st.SketchSize == sketch.Size, fl, false); err != nil {
		return nil, nil, usageOr(err), err
	}
	return &addTarget{c, st.SketchSize, c.InsertBatch}, func(bool) error { return nil }, exitOK, nil
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
