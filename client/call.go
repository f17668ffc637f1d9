package client

import (
	"context"
	"errors"
	"io"
	"iter"
	"net"
	"syscall"
	"time"

	"connectrpc.com/connect"
)

// unary makes a call, retried if idempotent, within Options.Timeout.
func unary[Req, Resp any](ctx context.Context, c *Client, idempotent bool, procedure string, call func(context.Context, *connect.Request[Req]) (*connect.Response[Resp], error), req *Req) (*Resp, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	var out *Resp
	err := c.retry(ctx, idempotent, procedure, func(ctx context.Context) error {
		resp, err := call(ctx, connect.NewRequest(req))
		if err == nil {
			out = resp.Msg
		}
		return err
	})
	return out, err
}

// openStream opens a stream, retried as an idempotent call until its
// answer starts.
func openStream[T any](ctx context.Context, c *Client, procedure string, open func(context.Context) (*connect.ServerStreamForClient[T], error)) (*connect.ServerStreamForClient[T], error) {
	var s *connect.ServerStreamForClient[T]
	err := c.retry(ctx, true, procedure, func(ctx context.Context) error {
		var err error
		s, err = open(ctx)
		return err
	})
	return s, err
}

// retry runs call until it succeeds, fails in a way not worth another
// try, or has been tried Options.Retries more times (idempotent calls
// only); the error is an *Error when the server answered one.
func (c *Client) retry(ctx context.Context, idempotent bool, procedure string, call func(context.Context) error) error {
	wait := c.o.Backoff
	for try := 0; ; try++ {
		err := call(ctx)
		if err == nil {
			return nil
		}
		err = c.wrap(procedure, err)
		if !(idempotent || neverSent(err)) || try >= c.o.Retries || !retryable(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		wait *= 2
	}
}

// streamed yields the values of a server stream's messages (each, through
// each, may yield several); the stream is opened as openStream does and
// not retried once an answer has started.
func streamed[T, V any](ctx context.Context, c *Client, procedure string, open func(context.Context) (*connect.ServerStreamForClient[T], error), each func(*T, func(V, error) bool) bool) iter.Seq2[V, error] {
	return func(yield func(V, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s, err := openStream(ctx, c, procedure, open)
		if err != nil {
			var zero V
			yield(zero, err)
			return
		}
		defer s.Close()
		for s.Receive() {
			if !each(s.Msg(), yield) {
				return
			}
		}
		if err := s.Err(); err != nil {
			var zero V
			yield(zero, c.wrap(procedure, err))
		}
	}
}

// retryable reports whether err is worth another try: the server could
// not be reached or went away before it answered (a refused or broken
// connection, a pooled one the server had closed), or it said to come back
// (connect's unavailable: 503, or a proxy's 502 or 504). The caller stops
// when its own context is done.
func retryable(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var e *Error
	return errors.As(err, &e) && e.Code == connect.CodeUnavailable
}

// neverSent reports whether err is a connection that could not be made:
// the server never saw the call, so even one that is not idempotent
// (InsertIfNew) may go again, to the next node of a replicated index.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
