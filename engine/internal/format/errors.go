package format

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCorrupt is what every decoder here returns for bytes that are not
// what it reads; the engine exports it as engine.ErrCorrupt.
var ErrCorrupt = errors.New("engine: corrupt")

// BlockError (engine.BlockError) locates a problem in one block of a permuted table: the table
// and the block's key (its last permuted fingerprint, as Check and the
// block directory name it). It matches ErrCorrupt when the block or its
// pending list is damaged, and whatever Err matches otherwise (an I/O
// error reading it).
type BlockError struct {
	Table int
	Block uint64
	Err   error
}

func (e *BlockError) Error() string {
	msg := e.Err.Error()
	if errors.Is(e.Err, ErrCorrupt) {
		// Say "corrupt" once, before the place.
		msg = strings.TrimPrefix(msg, ErrCorrupt.Error()+": ")
		return fmt.Sprintf("%v: table %d block %016x: %s", ErrCorrupt, e.Table, e.Block, msg)
	}
	return fmt.Sprintf("engine: table %d block %016x: %s", e.Table, e.Block, msg)
}

func (e *BlockError) Unwrap() error { return e.Err }

// BlockErr locates err at block key of table t.
func BlockErr(t int, key uint64, err error) error {
	return &BlockError{Table: t, Block: key, Err: err}
}

// CorruptBlock is a BlockError that matches ErrCorrupt, with a message
// (and any error it wraps with %w, such as the codec's).
func CorruptBlock(t int, key uint64, format string, args ...any) error {
	return BlockErr(t, key, fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...))
}

// Corrupt wraps a lower layer's error (codec, huffman, wal) so that it
// matches ErrCorrupt too, with what says where.
func Corrupt(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, what, err)
}
