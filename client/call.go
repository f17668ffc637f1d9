package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/simhashdb/simhashdb/api"
)

// call sends a request, retried if idempotent, and decodes a JSON answer
// into out (if not nil).
func (c *Client) call(ctx context.Context, idempotent bool, method, path string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	resp, err := c.send(ctx, idempotent, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err := io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: reading the answer: %w", method, path, err)
	}
	return nil
}

// send sends a request until it gets an answer that is not worth another
// try, or has tried Options.Retries more times (idempotent requests only);
// an answer other than 200 is returned as an *Error.
func (c *Client) send(ctx context.Context, idempotent bool, method, path string, body []byte) (*http.Response, error) {
	wait := c.o.Backoff
	for try := 0; ; try++ {
		resp, err := c.once(ctx, method, path, body)
		if err == nil {
			return resp, nil
		}
		if !idempotent || try >= c.o.Retries || !retryable(err) || ctx.Err() != nil {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, errors.Join(err, ctx.Err())
		case <-t.C:
		}
		wait *= 2
	}
}

func (c *Client) once(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if c.o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.o.Token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.o.HTTPClient.Do(req)
	if err != nil {
		return nil, &connError{err}
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e api.Error
	if json.Unmarshal(b, &e) != nil || e.Error == "" {
		e.Error = string(bytes.TrimSpace(b))
	}
	return nil, &Error{Method: method, Path: path, Status: resp.StatusCode, Message: e.Error}
}

// connError is a request that got no answer.
type connError struct{ err error }

func (e *connError) Error() string { return "client: " + e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// retryable reports whether err is worth another try: no answer, or an
// answer that says to come back.
func retryable(err error) bool {
	var ce *connError
	if errors.As(err, &ce) {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	var e *Error
	if errors.As(err, &e) {
		switch e.Status {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	}
	return false
}
