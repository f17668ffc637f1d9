package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/client"
	"github.com/simhashdb/simhashdb/engine"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/gen/simhashdb/v1/simhashdbv1connect"
	"github.com/simhashdb/simhashdb/internal/nettest"
	"github.com/stretchr/testify/require"
)

// fixed answers Get and InsertIfNew with fixed messages.
type fixed struct {
	simhashdbv1connect.UnimplementedIndexServiceHandler
}

func (fixed) Get(context.Context, *connect.Request[simhashdbv1.GetRequest]) (*connect.Response[simhashdbv1.GetResponse], error) {
	return connect.NewResponse(&simhashdbv1.GetResponse{Document: &simhashdbv1.Document{Id: 1, Fingerprint: 7, Name: "a"}}), nil
}

func (fixed) InsertBatch(context.Context, *connect.Request[simhashdbv1.InsertBatchRequest]) (*connect.Response[simhashdbv1.InsertBatchResponse], error) {
	return connect.NewResponse(&simhashdbv1.InsertBatchResponse{Stored: 1}), nil
}

func (fixed) InsertIfNew(context.Context, *connect.Request[simhashdbv1.InsertIfNewRequest]) (*connect.Response[simhashdbv1.InsertIfNewResponse], error) {
	return connect.NewResponse(&simhashdbv1.InsertIfNewResponse{Inserted: true}), nil
}

// dropped is flaky's "status" for a connection closed with no answer.
const dropped = -1

// flaky answers an HTTP status fails times (as a proxy in front of a
// server that is restarting would), then as the service does.
func flaky(t *testing.T, status int, fails int64) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	_, h := simhashdbv1connect.NewIndexServiceHandler(fixed{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= fails {
			if status == dropped { // the server goes away before it answers
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			w.WriteHeader(status)
			w.Write([]byte("try later"))
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &calls
}

// TestRetries: idempotent calls are tried again when the server is
// unavailable (502, 503 and 504 from a proxy), up to Options.Retries more
// times; other answers, and InsertIfNew, are not.
func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		fails     int64
		call      func(*client.Client) error
		wantCalls int64
		ok        bool
	}{
		{"get after two 503", http.StatusServiceUnavailable, 2, get, 3, true},
		{"get after two dropped connections", dropped, 2, get, 3, true},
		{"a batch after a dropped connection", dropped, 1, insertBatch, 2, true},
		{"insert-if-new after a dropped connection: not retried", dropped, 1, insertIfNew, 1, false},
		{"get after two 502", http.StatusBadGateway, 2, get, 3, true},
		{"get past the retries", http.StatusGatewayTimeout, 10, get, 4, false},
		{"get after a 500: not retried", http.StatusInternalServerError, 1, get, 1, false},
		{"get after a 404: not retried", http.StatusNotFound, 1, get, 1, false},
		{"insert-if-new after a 503: not retried", http.StatusServiceUnavailable, 1, insertIfNew, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, calls := flaky(t, tc.status, tc.fails)
			c, err := client.New(ts.URL, client.Options{Retries: 3, Backoff: time.Millisecond})
			require.NoError(t, err)
			err = tc.call(c)
			if tc.ok {
				require.NoError(t, err)
			} else {
				var ce *client.Error
				require.ErrorAs(t, err, &ce)
				require.NotEqual(t, connect.Code(0), ce.Code)
			}
			require.Equal(t, tc.wantCalls, calls.Load())
		})
	}
}

// TestRetryConnection: a server that cannot be reached is tried again,
// and the error says it was unavailable.
func TestRetryConnection(t *testing.T) {
	c, err := client.New("http://"+nettest.Refused(t), client.Options{Retries: 2, Backoff: time.Millisecond})
	require.NoError(t, err)
	_, err = c.Get(ctx, 1)
	require.ErrorIs(t, err, client.ErrUnavailable)
}

func get(c *client.Client) error {
	_, err := c.Get(ctx, 1)
	return err
}

func insertBatch(c *client.Client) error {
	return c.InsertBatch(ctx, []engine.Doc{{ID: 1, Fingerprint: 7}})
}

func insertIfNew(c *client.Client) error {
	_, _, err := c.InsertIfNew(ctx, engine.Doc{ID: 1, Fingerprint: 7}, 3)
	return err
}

// TestErrorMatches: each engine error the server names, and each code,
// matches its sentinel.
func TestErrorMatches(t *testing.T) {
	for kind, want := range api.ErrorKinds {
		err := &client.Error{Procedure: "Get", Code: connect.CodeInvalidArgument, Kind: kind, Message: "m"}
		require.ErrorIs(t, err, want, "%s", kind)
	}
	for code, want := range map[connect.Code]error{
		connect.CodeUnauthenticated:   client.ErrUnauthorized,
		connect.CodeUnavailable:       client.ErrUnavailable,
		connect.CodeResourceExhausted: client.ErrTooLarge,
	} {
		require.ErrorIs(t, &client.Error{Code: code}, want, "%v", code)
	}
	err := &client.Error{Code: connect.CodeInternal}
	for _, sentinel := range append([]error{client.ErrUnauthorized, client.ErrUnavailable, client.ErrTooLarge}, engineErrors()...) {
		require.False(t, errors.Is(err, sentinel), "an internal error is none of them")
	}
}

func engineErrors() []error {
	var out []error
	for _, err := range api.ErrorKinds {
		out = append(out, err)
	}
	return out
}

// TestRouteNodes: given several nodes, a call goes to the next when one
// cannot be reached (even InsertIfNew: the dead node never saw it) or, if
// it may be repeated, is unavailable; later calls stay on the node that
// answered.
func TestRouteNodes(t *testing.T) {
	gone := "http://" + nettest.Refused(t)
	busy, busyCalls := flaky(t, http.StatusServiceUnavailable, 1000)
	live, liveCalls := flaky(t, 0, 0)
	c, err := client.New(gone+","+live.URL, client.Options{Retries: 3, Backoff: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, insertIfNew(c))
	require.Equal(t, int64(1), liveCalls.Load())

	c, err = client.New(busy.URL+","+live.URL, client.Options{Retries: 3, Backoff: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, get(c))
	require.NoError(t, insertBatch(c))
	require.NoError(t, insertIfNew(c))
	require.Equal(t, int64(1), busyCalls.Load())
	require.Equal(t, int64(4), liveCalls.Load())

	for _, bad := range []string{"http://a:1,", "http://a:1,ftp://b:2", "http://a:1/x,http://b:2"} {
		_, err := client.New(bad, client.Options{})
		require.ErrorContains(t, err, "server address", bad)
	}
}
