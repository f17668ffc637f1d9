package client

import (
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
)

// Errors a server's answers map to besides the engine's (Error.Unwrap).
var (
	// ErrUnauthorized: the server wants a token and did not get the one
	// it has.
	ErrUnauthorized = errors.New("client: unauthorized")
	// ErrUnavailable: the server could not be reached, is closing, or is
	// busy reading other batches; try again later.
	ErrUnavailable = errors.New("client: server unavailable")
	// ErrTooLarge: a request over one of the server's limits.
	ErrTooLarge = errors.New("client: request too large")
)

// Error is a call the server refused or could not answer. It matches,
// with errors.Is, the engine's error the server answered for
// (engine.ErrNotFound, ErrInput, ErrDistance, ErrDiskFull, ErrReadOnly,
// ErrClosed, ErrCorrupt: the server names it, api.ErrorKindHeader) or the
// client's (ErrUnauthorized, ErrUnavailable, ErrTooLarge).
type Error struct {
	Procedure string       // the RPC, as IndexService names it: "Get"
	Code      connect.Code // the RPC's code
	Kind      string       // the engine's error, a key of api.ErrorKinds, or ""
	Message   string
	err       error // connect's, for its details
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = codeText[e.Code]
	}
	return fmt.Sprintf("client: %s: %s: %s", e.Procedure, e.Code, msg)
}

// codeText says what a code means where the server gave no message (a
// refusal before the service, or a proxy's).
var codeText = map[connect.Code]string{
	connect.CodeUnauthenticated: "the server wants its bearer token (Options.Token; --token-file) and did not get it",
	connect.CodeUnavailable:     "the server is not there, closing, or busy (try again later)",
	connect.CodeUnimplemented:   "no such procedure at this address (not a simhashdb serve, or an older one)",
	connect.CodeUnknown:         "the server, or a proxy in front of it, answered something other than the API",
}

// Unwrap returns the sentinel e matches and connect's error.
func (e *Error) Unwrap() []error {
	var sentinel error
	if err, ok := api.ErrorKinds[e.Kind]; ok {
		sentinel = err
	} else {
		switch e.Code {
		case connect.CodeUnauthenticated:
			sentinel = ErrUnauthorized
		case connect.CodeUnavailable:
			sentinel = ErrUnavailable
		case connect.CodeResourceExhausted:
			sentinel = ErrTooLarge
		}
	}
	var out []error
	for _, err := range []error{sentinel, e.err} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// wrap makes a call's error an *Error; the context's own errors stay
// themselves.
func (c *Client) wrap(procedure string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return fmt.Errorf("client: %s: %w", procedure, err)
	}
	return &Error{Procedure: procedure, Code: ce.Code(), Kind: ce.Meta().Get(api.ErrorKindHeader), Message: ce.Message(), err: ce}
}

// corrupt is Check's answer about a damaged index: every problem the
// server found, in its words, matching engine.ErrCorrupt.
type corrupt string

func (c corrupt) Error() string { return string(c) }
func (c corrupt) Unwrap() error { return engine.ErrCorrupt }
