package engine

import "errors"

// Errors; match them with errors.Is.
var (
	// ErrClosed: the DB was closed.
	ErrClosed = errors.New("engine: closed")
	// ErrReadOnly: a write on a DB opened read-only.
	ErrReadOnly = errors.New("engine: read-only")
	// ErrOptions: invalid options, or options that contradict the stored index.
	ErrOptions = errors.New("engine: invalid options")
	// ErrNotFound: no document has the id.
	ErrNotFound = errors.New("engine: not found")
	// ErrDistance: a query's k exceeds the index's K.
	ErrDistance = errors.New("engine: distance above the index's K")
	// ErrCorrupt: stored data failed a check; the message says where.
	ErrCorrupt = errors.New("engine: corrupt")
	// ErrInput: a malformed argument (name too long, etc.).
	ErrInput = errors.New("engine: invalid input")
)
