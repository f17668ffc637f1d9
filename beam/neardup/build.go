package neardup

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/permutation"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*writeShardFn)(nil)).Elem())
}

// BuildTables writes design d's permuted tables of distinct fingerprints
// (packed batches, from Distinct) as the paper's compressed blocks: each
// table cut by the top shardBits bits of its permuted values (fewer if its
// prefix is shorter) into shards, each shard a codec block stream (its own
// Huffman code, trained on it) named ShardName(prefix, table, shard). It
// returns the names written and counts each table's fingerprints and bytes
// (CounterTableFPs, CounterTableBytes + the table's number), from which a
// size report compares bits per fingerprint with codec.Bound.
func BuildTables(s beam.Scope, distinct beam.PCollection, d *permutation.Design, shardBits, blockSize int, prefix string) (beam.PCollection, error) {
	s = s.Scope("neardup.BuildTables")
	if blockSize < codec.MinBlockSize || blockSize > codec.MaxBlockSize {
		return beam.PCollection{}, fmt.Errorf("%w: %d", codec.ErrBlockSize, blockSize)
	}
	filesystem.ValidateScheme(prefix)
	groups, err := byTable(s, distinct, d, shardBits)
	if err != nil {
		return beam.PCollection{}, err
	}
	return beam.ParDo(s, &writeShardFn{Prefix: prefix, BlockSize: blockSize}, groups), nil
}

// ShardName is the name of a shard of a table that BuildTables writes.
func ShardName(prefix string, table int, shard uint64) string {
	return fmt.Sprintf("%s-t%03d-s%08x.blocks", prefix, table, shard)
}

type writeShardFn struct {
	Prefix    string `json:"prefix"`
	BlockSize int    `json:"block_size"`
}

func (f *writeShardFn) ProcessElement(ctx context.Context, key uint64, batches func(*[]byte) bool, emit func(string)) error {
	vals, err := groupValues(batches)
	if err != nil || len(vals) == 0 {
		return err
	}
	t := groupTable(key)
	name := ShardName(f.Prefix, t, key&(1<<56-1))
	code, err := codec.Train(vals)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var size int64
	err = WriteFile(ctx, name, func(bw io.Writer) error {
		w, err := codec.NewStreamWriter(bw, code, f.BlockSize)
		if err != nil {
			return err
		}
		for _, v := range vals {
			if err := w.Add(v); err != nil {
				return err
			}
		}
		err = w.Close()
		size = w.Size()
		return err
	})
	if err != nil {
		return err
	}
	tn := strconv.Itoa(t)
	beam.NewCounter(Namespace, CounterTableFPs+tn).Inc(ctx, int64(len(vals)))
	beam.NewCounter(Namespace, CounterTableBytes+tn).Inc(ctx, size)
	emit(name)
	return nil
}
