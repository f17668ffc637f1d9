package store

import "github.com/cockroachdb/pebble/v2"

// Batch gathers writes for Commit (through BatchWrites) in memory.
type Batch struct{ b *pebble.Batch }

// NewBatch returns an empty batch.
func (s *Store) NewBatch() *Batch { return &Batch{s.db.NewBatch()} }

// Set writes key's value.
func (b *Batch) Set(key, value []byte) error { return b.b.Set(key, value, nil) }

// Delete deletes key.
func (b *Batch) Delete(key []byte) error { return b.b.Delete(key, nil) }

// Merge merges value into key's (the store's merge operator: a pending
// list's runs appended).
func (b *Batch) Merge(key, value []byte) error { return b.b.Merge(key, value, nil) }

// Len is the batch's size in bytes.
func (b *Batch) Len() int { return b.b.Len() }

// Empty reports whether the batch holds no write.
func (b *Batch) Empty() bool { return b.b.Empty() }

// Close lets go of the batch's memory.
func (b *Batch) Close() error { return b.b.Close() }

// EachKey calls fn with the key of each write of b, in the order they
// were made, until fn fails.
func (b *Batch) EachKey(fn func(key []byte) error) error {
	return eachBatchOp(b.b, func(op batchOp) error { return fn(op.key) })
}
