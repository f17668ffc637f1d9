package client_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/simhashdb/simhashdb/client"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/stretchr/testify/require"
)

// flaky answers status fails times, then a document.
func flaky(t *testing.T, status int, fails int64) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= fails {
			w.WriteHeader(status)
			w.Write([]byte(`{"error":"try later"}`))
			return
		}
		w.Write([]byte(`{"id":1,"name":"a","fp":"0x0000000000000007","inserted":true,"duplicates":[]}`))
	}))
	t.Cleanup(ts.Close)
	return ts, &calls
}

// TestRetries: idempotent calls are tried again on 502, 503 and 504, up to
// Options.Retries more times; other answers, and InsertIfNew, are not.
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
				require.Equal(t, tc.status, ce.Status)
			}
			require.Equal(t, tc.wantCalls, calls.Load())
		})
	}
}

func get(c *client.Client) error {
	_, err := c.Get(ctx, 1)
	return err
}

func insertIfNew(c *client.Client) error {
	_, _, err := c.InsertIfNew(ctx, engine.Doc{ID: 1, Fingerprint: 7}, 3)
	return err
}

// TestErrorMatches: each status the server answers matches its sentinel.
func TestErrorMatches(t *testing.T) {
	for status, want := range map[int]error{
		http.StatusNotFound:              engine.ErrNotFound,
		http.StatusBadRequest:            engine.ErrInput,
		http.StatusInsufficientStorage:   engine.ErrDiskFull,
		http.StatusForbidden:             engine.ErrReadOnly,
		http.StatusUnauthorized:          client.ErrUnauthorized,
		http.StatusServiceUnavailable:    client.ErrUnavailable,
		http.StatusRequestEntityTooLarge: client.ErrTooLarge,
	} {
		err := &client.Error{Method: "GET", Path: "/v1/x", Status: status, Message: "m"}
		require.ErrorIs(t, err, want, "%d", status)
	}
	require.NoError(t, (&client.Error{Status: http.StatusInternalServerError}).Unwrap())
}
