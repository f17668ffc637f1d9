package client

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/simhashdb/simhashdb/engine"
)

// Errors a server's answers map to besides the engine's (Error.Unwrap).
var (
	// ErrUnauthorized: the server wants a token and did not get the one
	// it has.
	ErrUnauthorized = errors.New("client: unauthorized")
	// ErrUnavailable: the server is closing, or busy reading other
	// batches; try again later.
	ErrUnavailable = errors.New("client: server unavailable")
	// ErrTooLarge: a request over one of the server's limits.
	ErrTooLarge = errors.New("client: request too large")
)

// Error is an answer of the server other than 200. It matches, with
// errors.Is, the engine's error the server answered for (engine.ErrNotFound
// for 404, engine.ErrInput for 400, engine.ErrDiskFull for 507,
// engine.ErrReadOnly for 403) or the client's (ErrUnauthorized,
// ErrUnavailable, ErrTooLarge).
type Error struct {
	Method, Path string
	Status       int
	Message      string // the server's {"error"}
}

func (e *Error) Error() string {
	return fmt.Sprintf("client: %s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

func (e *Error) Unwrap() error {
	switch e.Status {
	case http.StatusNotFound:
		return engine.ErrNotFound
	case http.StatusBadRequest:
		return engine.ErrInput
	case http.StatusInsufficientStorage:
		return engine.ErrDiskFull
	case http.StatusForbidden:
		return engine.ErrReadOnly
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusServiceUnavailable:
		return ErrUnavailable
	case http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	}
	return nil
}
