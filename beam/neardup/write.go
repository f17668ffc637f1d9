package neardup

import (
	"context"
	"fmt"
	"io"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/cespare/xxhash/v2"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*shardLineFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*writeLinesFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*shardNumbersFn)(nil)).Elem())
	register.Emitter2[int, bool]()
	register.Iter1[bool]()
	register.Emitter2[int, string]()
	register.Iter1[string]()
}

// WriteLines writes lines (strings, without their newline) to path when
// shards is 1, and otherwise to the files ShardFile(path, i, shards), each
// line in the shard its hash names, so that no one worker writes them all.
// Every file is written, if empty; the order of the lines is not kept.
func WriteLines(s beam.Scope, path string, shards int, lines beam.PCollection) {
	s = s.Scope("neardup.WriteLines")
	filesystem.ValidateScheme(path)
	shards = max(shards, 1)
	// Every shard's number, so that an empty shard is a group too.
	all := beam.ParDo(s, &shardNumbersFn{N: shards}, beam.Impulse(s))
	keyed := beam.ParDo(s, &shardLineFn{N: shards}, lines)
	beam.ParDo0(s, &writeLinesFn{Path: path, N: shards}, beam.CoGroupByKey(s, all, keyed))
}

type shardNumbersFn struct {
	N int `json:"n"`
}

func (f *shardNumbersFn) ProcessElement(_ []byte, emit func(int, bool)) {
	for i := range f.N {
		emit(i, true)
	}
}

// ShardFile names shard i of n of path, as WriteLines writes them.
func ShardFile(path string, i, n int) string { return fmt.Sprintf("%s-%05d-of-%05d", path, i, n) }

type shardLineFn struct {
	N int `json:"n"`
}

func (f *shardLineFn) ProcessElement(line string, emit func(int, string)) {
	emit(int(xxhash.Sum64String(line)%uint64(f.N)), line)
}

type writeLinesFn struct {
	Path string `json:"path"`
	N    int    `json:"n"`
}

func (f *writeLinesFn) ProcessElement(ctx context.Context, i int, _ func(*bool) bool, lines func(*string) bool) error {
	name := f.Path
	if f.N > 1 {
		name = ShardFile(f.Path, i, f.N)
	}
	return WriteFile(ctx, name, func(w io.Writer) error {
		var line string
		for lines(&line) {
			if _, err := io.WriteString(w, line+"\n"); err != nil {
				return err
			}
		}
		return nil
	})
}
