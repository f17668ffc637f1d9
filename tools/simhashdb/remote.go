package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/client"
	"github.com/simhashdb/simhashdb/engine"
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
	token, err := rf.token()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(rf.server, client.Options{Token: token, Timeout: remoteTimeout})
	if err != nil {
		return nil, nil, err
	}
	return c, func() error { return nil }, nil
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

// remote is a client of the server's API.
type remote struct {
	base, token string
	hc          *http.Client
}

func (rf *remoteFlags) client() (*remote, error) {
	token, err := rf.token()
	if err != nil {
		return nil, err
	}
	return &remote{base: strings.TrimRight(rf.server, "/"), hc: &http.Client{Timeout: remoteTimeout}, token: token}, nil
}

// call sends a request and decodes a JSON answer into out (if not nil), or
// returns the server's error.
func (r *remote) call(ctx context.Context, method, path string, body io.Reader, out any) error {
	resp, err := r.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: the answer: %w", method, path, err)
	}
	return nil
}

// send sends a request; an answer other than 200 is returned as the
// server's error.
func (r *remote) send(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, body)
	if err != nil {
		return nil, err
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e struct{ Error string }
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return nil, &remoteError{r.base, resp.StatusCode, resp.Status, e.Error}
	}
	return resp, nil
}

// remoteError is an answer of the server other than 200.
type remoteError struct {
	base   string
	status int
	text   string // the status line's text
	msg    string // the server's {"error"}
}

func (e *remoteError) Error() string { return fmt.Sprintf("%s: %s %s", e.base, e.text, e.msg) }

// postLines sends a body of lines in requests of at most chunk lines, and
// calls each with the answer to each request.
func (r *remote) postLines(ctx context.Context, path string, lines []string, each func(io.Reader) error) error {
	const chunk = 50_000
	for len(lines) > 0 {
		n := min(len(lines), chunk)
		resp, err := r.send(ctx, "POST", path, strings.NewReader(strings.Join(lines[:n], "\n")+"\n"))
		if err != nil {
			return err
		}
		err = each(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		lines = lines[n:]
	}
	return nil
}
