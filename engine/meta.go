package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
)

// Limits of an application's settings.
const (
	MaxMetaName  = 255
	MaxMetaValue = 64 << 10
)

// SetMeta stores value under name in the index, durably, for Meta to
// return: a small setting that an application keeps with its index, such
// as how it fingerprints text (simhashdb's command line keeps its
// fingerprint options there, so that every later command uses them).
func (db *DB) SetMeta(ctx context.Context, name string, value []byte) (err error) {
	defer func() { err = storeErr(err) }()
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if name == "" || len(name) > MaxMetaName || len(value) > MaxMetaValue {
		return fmt.Errorf("%w: setting %q of %d bytes: want a name of 1 to %d bytes and at most %d bytes", ErrInput, name, len(value), MaxMetaName, MaxMetaValue)
	}
	if err := db.rlockOpen(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	b := db.store.NewBatch()
	defer b.Close()
	if err := b.Set(format.MetaUserKey(name), value); err != nil {
		return err
	}
	return db.store.Commit(ctx, db.store.BatchWrites(b))
}

// Meta returns the value SetMeta stored under name, or ErrNotFound.
func (db *DB) Meta(ctx context.Context, name string) (_ []byte, err error) {
	defer func() { err = storeErr(err) }()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := db.rlockOpen(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	v, c, err := db.store.Get(format.MetaUserKey(name))
	if errors.Is(err, store.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: setting %q", ErrNotFound, name)
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return slices.Clone(v), nil
}
